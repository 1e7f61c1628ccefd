"""What the ES is told: scores normalised against the baseline and the random policy, the one place the ES sign
is fixed (evosax minimises), and the rank combination of a generation's tasks. Host-side (numpy)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def ppo_gap(ppo, random, min_gap: float = 0.05):
    """PPO's improvement over a uniformly random policy, `ppo - random`: the unit of PPO-normalised scores
    (OPEN, Goldie et al. 2024; Agarwal et al. 2021), floored at `min_gap` x max(|ppo|, |random|) where PPO
    barely beats random, so that one task cannot swamp the others. Host-side (numpy)."""
    ppo, random = np.asarray(ppo, np.float64), np.asarray(random, np.float64)
    floor = min_gap * np.maximum(np.maximum(np.abs(ppo), np.abs(random)), 1e-6)
    return np.maximum(ppo - random, floor)


def ppo_normalised(score, ppo, random, min_gap: float = 0.05):
    """(score - random) / (ppo - random): 1 for PPO's own score, 0 for a uniformly random policy's (the gap
    floored as in `ppo_gap`); the sign is right on negative-return envs."""
    return (np.asarray(score, np.float64) - random) / ppo_gap(ppo, random, min_gap)


def to_minimise(fitness: jnp.ndarray) -> jnp.ndarray:
    """[P] returns (higher is better) -> [P] values for evosax, which minimises: the sign is fixed here and
    nowhere else.

    A non-finite (diverged) member scores strictly worse than every finite one, by the generation's spread
    plus one, but stays finite: with identity fitness shaping an `inf` would turn the ES gradient into
    inf / NaN. When every member diverged all score 0, an uninformative generation.
    """
    finite = jnp.isfinite(fitness)
    loss = jnp.where(finite, -fitness, 0.0)
    worst = jnp.max(jnp.where(finite, loss, -jnp.inf))
    best = jnp.min(jnp.where(finite, loss, jnp.inf))
    penalty = jnp.where(jnp.any(finite), worst + (worst - best) + 1.0, 0.0)
    return jnp.where(finite, loss, penalty)


def centered_ranks(scores) -> np.ndarray:
    """Scores [P] (higher is better) -> ranks [P] centred in [-0.5, 0.5], float64: the worst member -0.5, the best
    0.5, tied members the mean of their ranks (so equal scores get equal ranks); a non-finite score (a diverged
    member) ranks below every finite one, several tie. One member: 0."""
    x = np.asarray(scores, np.float64).reshape(-1)
    P = x.size
    if P <= 1:
        return np.zeros(P)
    x = np.where(np.isfinite(x), x, -np.inf)
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]  # where each run of equal scores starts
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], P]  # one past each run's end
    ranks = np.empty(P)
    ranks[order] = ((starts + ends - 1) / 2)[np.cumsum(first) - 1]  # a run's members share its mean position
    return ranks / (P - 1) - 0.5


def mean_task_ranks(per_task) -> np.ndarray:
    """Members' scores on each task of a generation, T arrays [P] -> [P]: the mean over tasks of each task's
    `centered_ranks`, in [-0.5, 0.5] (meta-training's `combine: rank`).

    Why: averaging normalised scores lets the task whose scores spread widest in normalised units order the
    population (a task where PPO barely beats the random policy has a tiny PPO gap, so its scores span far more
    than a near-ceiling task's), and a rank-based fitness shaping of that mean does not undo it. Ranking within
    each task first makes every task count equally, whatever its scale: the result does not change under any
    positive affine rescaling of one task's scores. A task on which no member has a finite score (PPO's control
    had none, or every member diverged) orders nothing and is left out; with none left the result is all NaN,
    an uninformative generation (`to_minimise` gives every member the same value). A member with a non-finite
    score on any informative task diverged: its result is NaN, which `to_minimise` ranks below every finite
    member, as under `combine: mean` (ranking it worst on that task alone would let it place mid-pack)."""
    per_task = [np.asarray(s, np.float64).reshape(-1) for s in per_task]
    informative = [s for s in per_task if np.isfinite(s).any()]
    if not informative:
        return np.full(per_task[0].shape if per_task else (0,), np.nan)
    ranks = np.mean(np.stack([centered_ranks(s) for s in informative]), axis=0)
    diverged = ~np.all(np.isfinite(np.stack(informative)), axis=0)
    return np.where(diverged, np.nan, ranks)
