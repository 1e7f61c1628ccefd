"""Drift functions of mirror learning (Kuba et al. 2022): the actor loss is -(r A - drift(r, A)).

A drift takes the probability ratio r = pi_new / pi_old and the normalised advantage A (same shapes, any
batch shape) and returns a non-negative penalty of that shape, 0 at r = 1 with zero slope there.

`ppo_drift` and `dpo_drift` are the package's one definition of PPO's and DPO's drifts: the trainer calls them
with jax.numpy, distillation (`analysis.families`) with float64 numpy (`xp=np`), and `PPO_EXPRESSION` /
`DPO_EXPRESSION` (`metadisco.objectives.expression`) write the same functions in the expression grammar (a
test checks that all three agree).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.objectives.registry import DRIFTS, DriftInputs, Piece, Progress


def relu(x, xp=jnp):
    """ReLU with a zero gradient at 0 (jax.nn.relu, not maximum(x, 0), whose gradient there is 1/2), which the trainer
    relies on; `xp` numpy for figures."""
    return jax.nn.relu(x) if xp is jnp else xp.maximum(x, 0.0)


def ppo_drift(ratio, advantage, eps: float = 0.2, xp=jnp):
    """ReLU((r - clip(r, 1 - eps, 1 + eps)) A): PPO's clip objective as a drift (Schulman et al. 2017, as a
    drift in Kuba et al. 2022)."""
    return relu((ratio - xp.clip(ratio, 1.0 - eps, 1.0 + eps)) * advantage, xp)


def soft_hinge(x, scale: float, xp=jnp):
    # x - s tanh(x / s) is 0 with zero slope at x = 0; its derivative is tanh^2(x / s) >= 0.
    return relu(x - scale * xp.tanh(x / scale), xp)


def dpo_drift(ratio, advantage, alpha: float = 2.0, beta: float = 0.6, xp=jnp):
    """DPO's drift (Lu et al. 2022): soft hinge of (r - 1) A for A >= 0, of log(r) A for A < 0."""
    positive = soft_hinge((ratio - 1.0) * advantage, alpha, xp)
    negative = soft_hinge(xp.log(ratio) * advantage, beta, xp)
    return xp.where(advantage >= 0, positive, negative)


@DRIFTS.register("ppo")
@dataclass(frozen=True)
class PPODrift(Piece):
    eps: float = 0.2
    positive_options = ("eps",)

    def __call__(self, meta, inputs: DriftInputs, progress: Progress) -> jax.Array:
        del meta, progress
        return ppo_drift(inputs.ratio, inputs.advantage, self.eps)


@DRIFTS.register("dpo")
@dataclass(frozen=True)
class DPODrift(Piece):
    alpha: float = 2.0
    beta: float = 0.6
    positive_options = ("alpha", "beta")  # the soft hinges divide by them
    baseline = "DPO"

    def __call__(self, meta, inputs: DriftInputs, progress: Progress) -> jax.Array:
        del meta, progress
        return dpo_drift(inputs.ratio, inputs.advantage, self.alpha, self.beta)
