"""A learned drift of four numbers: DPO's closed form (Lu et al., NeurIPS 2022) with its two scales learned and,
with `progress`, annealed over training (the temporal awareness of TA-LPO; Jackson, Lu et al., ICLR 2024):

    alpha(p) = alpha * exp(a0 + a1 (p - 1/2)),   beta(p) = beta * exp(b0 + b1 (p - 1/2)),   p = n / N in [0, 1)
    drift    = dpo_drift(r, A, alpha(p), beta(p))

alpha sets how far a positive-advantage action may be pushed up before the drift pulls it back ((r - 1) A past
about alpha), beta the same for pushing a negative-advantage action down (log(r) A past about beta). a0, b0 move
them for the whole run; a1, b1 change them from the start of training to its end.

Why a family this small: LPO's and TA-LPO's networks have 500-3,000 meta-parameters, and on a CPU budget the ES
estimate of a gradient over that many directions is mostly seed noise (`metadisco probe`). Four numbers are a
restricted search space: every direction the ES perturbs matters, and the result needs no distillation, it *is*
a closed form.

Valid for any meta-parameters: DPO's drift is one for every alpha, beta > 0 (each branch is a soft hinge
x - s tanh(x / s), >= 0 with value and slope 0 at x = 0, i.e. at r = 1). The log-scales are clipped to
[-LOG_SCALE_LIMIT, LOG_SCALE_LIMIT] so that no draw makes a scale 0 or infinite. Zero meta-parameters give DPO.

Meta-parameters: {"log_alpha": float32[k], "log_beta": float32[k]}, k = 2 with `progress` (a0, a1), else 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.objectives.drift import dpo_drift
from metadisco.objectives.registry import DRIFTS, DriftInputs, Piece, Progress

LOG_SCALE_LIMIT = 10.0  # exp(+-10): scales from 4.5e-5 to 2.2e4 times DPO's, finite for any draw


def learned_scale(base, log_scale, fraction=None):
    """base exp(a0 + a1 (p - 1/2)), the log-factor clipped to +-LOG_SCALE_LIMIT: a DPO scale at training progress
    p = n / N (`fraction`); base exp(a0) when `fraction` is None (not annealed). `log_scale`: [a0, a1] or [a0]."""
    log_factor = log_scale[0]
    if fraction is not None:
        log_factor = log_factor + log_scale[1] * (jnp.asarray(fraction, log_scale.dtype) - 0.5)
    return base * jnp.exp(jnp.clip(log_factor, -LOG_SCALE_LIMIT, LOG_SCALE_LIMIT))


@DRIFTS.register("learned_dpo")
@dataclass(frozen=True)
class LearnedDPODrift(Piece):
    """DPO with learned (and, with `progress`, annealed) scales alpha and beta: 4 meta-parameters (2 without)."""

    alpha: float = 2.0  # DPO's constants: the scales at zero meta-parameters
    beta: float = 0.6
    progress: bool = True  # anneal: the scales also depend on n / N
    positive_options = ("alpha", "beta")
    baseline = "DPO"  # zero meta-parameters give DPO: paired fitness is DPO-normalised

    def zero_meta(self) -> dict:
        k = 2 if self.progress else 1
        return {"log_alpha": jnp.zeros((k,), jnp.float32), "log_beta": jnp.zeros((k,), jnp.float32)}

    def scales(self, meta, progress: Progress) -> tuple[jax.Array, jax.Array]:
        """(alpha(p), beta(p)), two scalars: the DPO scales at training progress p."""
        fraction = progress.fraction if self.progress else None
        return learned_scale(self.alpha, meta["log_alpha"], fraction), learned_scale(self.beta, meta["log_beta"],
                                                                                     fraction)

    def __call__(self, meta, inputs: DriftInputs, progress: Progress) -> jax.Array:
        alpha, beta = self.scales(meta, progress)
        return dpo_drift(inputs.ratio, inputs.advantage, alpha, beta)
