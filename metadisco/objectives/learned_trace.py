"""A learned trace: lambda per step as a residual around PQN's (Peng's) constant lambda.

    lambda_t = clip(lambda + net([greedy_{t+1}, (n / N)]), 0, 1)

net = Dense(16) -> tanh -> Dense(16) -> tanh -> Dense(1), with biases, on whether the next action was greedy
(1) or exploratory (0) and, optionally, the training fraction n / N. It can keep PQN's trace, cut it after
exploratory actions as Watkins's Q(lambda) does (a residual of -lambda at greedy = 0), lengthen or shorten
it, and change that as training goes on. All-zero meta-parameters make net 0, and lambda + 0 clipped to
[0, 1] is lambda itself for any lambda in [0, 1]: PQN exactly, bit for bit (tested through a training run).

Meta-parameters: {"dense_0": {"kernel": [inputs, h0], "bias": [h0]}, ..., "dense_k": {"kernel": [h, 1], ...}}.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from metadisco.objectives.mlp import ResidualMLP
from metadisco.objectives.registry import TRACES, Piece, Progress, TraceInputs
from metadisco.objectives.trace import peng_trace


@TRACES.register("learned")
@dataclass(frozen=True)
class LearnedTrace(ResidualMLP, Piece):
    """Peng's lambda plus a learned network of (next action greedy, and optionally training progress)."""

    hidden: tuple[int, ...] = (16, 16)
    progress: bool = True
    label = "trace 'learned'"

    def __call__(self, meta, inputs: TraceInputs, progress: Progress):
        greedy = inputs.greedy_next
        residual = self.residual(meta, [greedy], progress.fraction)
        return jnp.clip(peng_trace(inputs.lam, greedy) + residual, 0.0, 1.0)
