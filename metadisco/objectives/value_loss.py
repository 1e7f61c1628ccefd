"""Value losses: per-sample loss of the critic's prediction `value` against the return target.

All inputs share one batch shape: `value` (new prediction), `old_value` (prediction at rollout time),
`target` (GAE return). The loss includes the conventional factor 1/2.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.objectives.registry import VALUE_LOSSES, Piece, Progress


def l2_value_loss(value: jax.Array, target: jax.Array) -> jax.Array:
    return 0.5 * jnp.square(value - target)


def clipped_l2_value_loss(value, old_value, target, clip_eps: float) -> jax.Array:
    """PPO's clipped value loss: the larger of the plain and the clipped squared error."""
    clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)
    return 0.5 * jnp.maximum(jnp.square(value - target), jnp.square(clipped - target))


@VALUE_LOSSES.register("l2")
@dataclass(frozen=True)
class L2ValueLoss(Piece):
    def __call__(self, meta, value, old_value, target, clip_eps: float, progress: Progress):
        del meta, old_value, clip_eps, progress
        return l2_value_loss(value, target)


@VALUE_LOSSES.register("clipped_l2")
@dataclass(frozen=True)
class ClippedL2ValueLoss(Piece):
    def __call__(self, meta, value, old_value, target, clip_eps: float, progress: Progress):
        del meta, progress
        return clipped_l2_value_loss(value, old_value, target, clip_eps)
