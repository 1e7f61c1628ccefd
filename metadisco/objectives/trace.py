"""Traces: the lambda with which Q(lambda) mixes the one-step bootstrap and the longer return, per step.

`trace(meta, TraceInputs(lam, greedy_next), progress) -> lambda_t`, [T, N] like `greedy_next`; the trainer
feeds it to `metadisco.rl.q_lambda.q_lambda_returns`. PQN (Gallici, Fellows et al., ICLR 2025) uses Peng's
Q(lambda): the same lambda at every step, whatever the behaviour policy did. Watkins's Q(lambda) (Watkins 1989)
cuts the trace after an exploratory (non-greedy) action, so that the return stays that of the greedy policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.objectives.registry import TRACES, Piece, Progress, TraceInputs


def peng_trace(lam: jax.Array, greedy_next: jax.Array) -> jax.Array:
    """lambda at every step: [T, N] like `greedy_next`."""
    return jnp.broadcast_to(jnp.asarray(lam, greedy_next.dtype), greedy_next.shape)


@TRACES.register("peng")
@dataclass(frozen=True)
class PengTrace(Piece):
    """PQN's own choice: lambda everywhere."""

    def __call__(self, meta, inputs: TraceInputs, progress: Progress) -> jax.Array:
        del meta, progress
        return peng_trace(inputs.lam, inputs.greedy_next)


@TRACES.register("watkins")
@dataclass(frozen=True)
class WatkinsTrace(Piece):
    """lambda where the next action was greedy, 0 (a one-step bootstrap) after an exploratory one."""

    def __call__(self, meta, inputs: TraceInputs, progress: Progress) -> jax.Array:
        del meta, progress
        return peng_trace(inputs.lam, inputs.greedy_next) * inputs.greedy_next
