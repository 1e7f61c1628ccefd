"""PBT's strategies (Jaderberg et al. 2017, section 3; REFERENCE.md section 11), by name, as pure numpy functions.

    ready    when agents are compared:            every: every `updates` updates
    exploit  who copies whom:                     truncation: the bottom `fraction` (by the round's return)
                                                  copies a random member of the top `fraction`
                                                  none: nobody (the population is a random search)
    explore  how a copied agent's settings move:  perturb: each searched setting times one of `factors`
                                                  (0.8 or 1.2), or with `resample_probability` redrawn from
                                                  its range; resample: always redrawn
                                                  none: kept as copied

Only agents that copied explore, as in Jaderberg et al.; values stay inside the searched ranges (clipped). All
randomness comes from the `rng` passed in, drawn from (seed, round), so a resumed run repeats every draw.
"""

from __future__ import annotations

import numpy as np

from metadisco.core.stats import rank_failures_last
from metadisco.trainers.hyper_space import Dimension

READY = ("every",)
EXPLOIT = ("truncation", "none")
EXPLORE = ("perturb", "resample", "none")


# Scores with non-finite ones (no finished episode, diverged) as -inf: they rank below every other.
rank_scores = rank_failures_last


def truncation(rng: np.random.Generator, scores: np.ndarray, fraction: float) -> np.ndarray:
    """parents [N]: agent i continues from agent parents[i]; the bottom floor(fraction * N) agents (at least one
    when N >= 2) each copy a uniformly drawn member of the top as many. Ties rank by index (stable sort)."""
    n = len(scores)
    parents = np.arange(n)
    cut = min(max(int(fraction * n), 1), n // 2) if n >= 2 else 0
    if cut == 0:
        return parents
    order = np.argsort(-rank_scores(scores), kind="stable")  # best first
    top, bottom = order[:cut], order[n - cut:]
    parents[bottom] = top[rng.integers(0, cut, cut)]
    return parents


def exploit(kind: str, rng: np.random.Generator, scores: np.ndarray, fraction: float) -> np.ndarray:
    if kind == "none":
        return np.arange(len(scores))
    return truncation(rng, scores, fraction)


def explore(kind: str, rng: np.random.Generator, values: dict[str, np.ndarray], copied: np.ndarray,
            space: tuple[Dimension, ...], factors: tuple[float, ...], resample_probability: float
            ) -> dict[str, np.ndarray]:
    """New values {setting: [N]} of the searched settings: agents with `copied` True move, the rest keep theirs.
    Draws are made for every agent and dimension in a fixed order, so the stream never depends on the scores."""
    out = {}
    n = len(copied)
    for d in space:
        old = np.asarray(values[d.name], np.float64)
        factor = np.asarray(factors, np.float64)[rng.integers(0, len(factors), n)]
        resample_draw = rng.uniform(0.0, 1.0, n)
        fresh = d.from_unit(rng.uniform(0.0, 1.0, n)) if not d.values else \
            np.asarray(d.values)[rng.integers(0, len(d.values), n)]
        if kind == "perturb":
            moved = np.where(resample_draw < resample_probability, fresh, d.clip(old * factor))
        elif kind == "resample":
            moved = fresh
        else:
            moved = old
        out[d.name] = np.where(copied, moved, old)
    return out
