"""Drift functions of mirror learning (Kuba et al. 2022): the actor loss is -(r A - drift(r, A)).

A drift takes the probability ratio r = pi_new / pi_old and the normalised advantage A (same shapes, any
batch shape) and returns a non-negative penalty of that shape, 0 at r = 1 with zero slope there.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.objectives.registry import DRIFTS, Piece, Progress


def ppo_drift(ratio: jax.Array, advantage: jax.Array, eps: float = 0.2) -> jax.Array:
    """ReLU((r - clip(r, 1 - eps, 1 + eps)) A): PPO's clip objective as a drift (Kuba et al., ICML 2022)."""
    return jax.nn.relu((ratio - jnp.clip(ratio, 1.0 - eps, 1.0 + eps)) * advantage)


def _soft_hinge(x: jax.Array, scale: float) -> jax.Array:
    # x - s tanh(x / s) is 0 with zero slope at x = 0; its derivative is tanh^2(x / s) >= 0.
    return jax.nn.relu(x - scale * jnp.tanh(x / scale))


def dpo_drift(ratio: jax.Array, advantage: jax.Array, alpha: float = 2.0, beta: float = 0.6) -> jax.Array:
    """DPO's drift (Lu et al. 2022): soft hinge of (r - 1) A for A >= 0, of log(r) A for A < 0."""
    positive = _soft_hinge((ratio - 1.0) * advantage, alpha)
    negative = _soft_hinge(jnp.log(ratio) * advantage, beta)
    return jnp.where(advantage >= 0, positive, negative)


@DRIFTS.register("ppo")
@dataclass(frozen=True)
class PPODrift(Piece):
    eps: float = 0.2
    positive_options = ("eps",)

    def __call__(self, meta, ratio, advantage, progress: Progress):
        del meta, progress
        return ppo_drift(ratio, advantage, self.eps)


@DRIFTS.register("dpo")
@dataclass(frozen=True)
class DPODrift(Piece):
    alpha: float = 2.0
    beta: float = 0.6
    positive_options = ("alpha", "beta")  # the soft hinges divide by them

    def __call__(self, meta, ratio, advantage, progress: Progress):
        del meta, progress
        return dpo_drift(ratio, advantage, self.alpha, self.beta)
