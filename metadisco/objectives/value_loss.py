"""Value losses: per-sample loss of the critic's prediction `value` against the return target.

All inputs (`ValueLossInputs`) share one batch shape: `value` (new prediction), `old_value` (prediction at
rollout time), `target` (GAE return). The loss includes the conventional factor 1/2.

`clip_eps` is an option of the clipped-L2 loss (`value_loss: {kind: clipped_l2, clip_eps: 0.2}`); it was the
trainer setting `value_clip_eps` before, which is now refused with a message saying where it went.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.objectives.registry import VALUE_LOSSES, Piece, Progress, ValueLossInputs


def l2_value_loss(value: jax.Array, target: jax.Array) -> jax.Array:
    return 0.5 * jnp.square(value - target)


def asymmetric_l2_value_loss(value, target, over: float, under: float) -> jax.Array:
    """0.5 (v - target)^2 weighted by `over` where the value overestimates (v > target), else by `under`: an
    expectile loss (Newey and Powell 1987) with tau = under / (over + under), times (over + under)."""
    error = value - target
    return 0.5 * jnp.where(error > 0, over, under) * jnp.square(error)


def clipped_l2_value_loss(value, old_value, target, clip_eps: float) -> jax.Array:
    """PPO's clipped value loss: the larger of the plain and the clipped squared error."""
    clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)
    return 0.5 * jnp.maximum(jnp.square(value - target), jnp.square(clipped - target))


@VALUE_LOSSES.register("l2")
@dataclass(frozen=True)
class L2ValueLoss(Piece):
    def __call__(self, meta, inputs: ValueLossInputs, progress: Progress) -> jax.Array:
        del meta, progress
        return l2_value_loss(inputs.value, inputs.target)


@VALUE_LOSSES.register("asymmetric_l2")
@dataclass(frozen=True)
class AsymmetricL2ValueLoss(Piece):
    """L2 with one weight for over- and one for underestimates (the closed form the learned value loss of
    `results/value_loss_cartpole/` distils to); over = under = 1 is L2."""

    over: float = 1.0  # weight of the squared error where v > target
    under: float = 1.0  # weight where v <= target
    positive_options = ("over", "under")

    def __call__(self, meta, inputs: ValueLossInputs, progress: Progress) -> jax.Array:
        del meta, progress
        return asymmetric_l2_value_loss(inputs.value, inputs.target, self.over, self.under)


@VALUE_LOSSES.register("clipped_l2")
@dataclass(frozen=True)
class ClippedL2ValueLoss(Piece):
    clip_eps: float = 0.2  # how far the new value may move from the old before the clipped error counts
    positive_options = ("clip_eps",)

    def __call__(self, meta, inputs: ValueLossInputs, progress: Progress) -> jax.Array:
        del meta, progress
        return clipped_l2_value_loss(inputs.value, inputs.old_value, inputs.target, self.clip_eps)
