"""The traced settings every algorithm has: the learning rate, gamma and the returns' lambda (`Hyper`).

An algorithm's own traced settings extend these (`metadisco.trainers.algorithm.Algorithm.hyper`: PPO's `PPOHyper`
adds its loss's coefficients and gradient clip); `metadisco.trainers.hyper` says what tracing them buys. This module
imports nothing of the package's, so that the algorithm registry and the config both build on it.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Hyper(NamedTuple):
    """The traced settings every algorithm has (`COMMON_TRACED`): float32 scalars for one agent, [runs] arrays when
    vmapped over a sweep or a PBT population. An algorithm with traced options of its own declares its own class,
    these fields first and its options after (`Algorithm.hyper`: PPO's `PPOHyper`)."""

    lr: Any
    gamma: Any
    gae_lambda: Any


COMMON_TRACED = Hyper._fields
