"""Paired evaluation: objectives and PPO trained on the same seed keys, in the same compiled call.

Members of a generation share their seed keys (common random numbers), so training PPO (the objective with
every learned piece at zero) on those keys too costs one more row of the population and gives each task a
control variate. "PPO" here and in the code is that baseline, whatever it is (`baseline_of`): PPO for
LPO / TA-LPO and learned value losses and optimisers, DPO for a `learned_dpo` drift, PQN for a TD objective.
A member's score on a task is

    1 + (member - ppo_same_keys) / (ppo_reference - random)

PPO itself scores exactly 1; the unit is PPO's improvement over a uniformly random policy, measured once per
task on many seeds (a stable scale: the per-generation control alone, on a few seeds, can sit near the random
return and blow the ratio up); envs of different scales add up and the sign is right on negative returns.
Rows are padded with copies of PPO to a multiple of the device count (every device runs the same per-device
program, so each copy gives the same numbers).
"""

from __future__ import annotations

import jax
import numpy as np

from metadisco.core.stats import seed_mean


def count_rows(population_size: int, devices: int) -> int:
    """Rows of a population evaluated with its PPO control: P + 1, rounded up to a multiple of `devices`."""
    return -(-(population_size + 1) // devices) * devices


def count(rows) -> int:
    return int(jax.tree.leaves(rows)[0].shape[0])


def _stack(trees: list):
    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def _concat(a, b):
    return jax.tree.map(lambda x, y: np.concatenate([np.asarray(x), np.asarray(y)]), a, b)


def with_control(population, control, devices: int):
    """Host population [P] -> rows [count_rows(P, devices)]: the members, then PPO (`control`) in every extra
    row. The control's score is row P."""
    P = count(population)
    extra = count_rows(P, devices) - P
    return _concat(population, _stack([control] * extra))


def padded(population, rows: int):
    """Host population [P] -> [rows]: the members, then copies of the first (their results are dropped): the rows
    of a population whose control trains apart (`metadisco.meta.problem.separate_control`)."""
    first = jax.tree.map(lambda x: np.asarray(x)[0], population)
    extra = rows - count(population)
    return population if extra == 0 else _concat(population, copies(first, extra))


def rows_of(seeds: np.ndarray, rows: int) -> np.ndarray:
    """Seed keys [S, 2] shared by every row: [rows, S, 2]."""
    seeds = np.asarray(seeds)
    return np.ascontiguousarray(np.broadcast_to(seeds, (rows, *seeds.shape)))


def paired_rows(num_pairs: int, devices: int, min_rows: int = 0) -> int:
    """Rows of a call of `num_pairs` (meta, PPO) pairs: max(2p, min_rows) rounded up to a multiple of
    `devices`."""
    return -(-max(2 * num_pairs, min_rows) // devices) * devices


def pairs(meta, control, num_pairs: int, devices: int, min_rows: int = 0):
    """Rows for `num_pairs` (meta, PPO) pairs: meta in rows [0, p), PPO in rows [p, 2p), then copies of PPO up
    to `paired_rows`. Returns (rows, row count)."""
    total = paired_rows(num_pairs, devices, min_rows)
    return _stack([meta] * num_pairs + [control] * (total - num_pairs)), total


def copies(point, rows: int):
    """`rows` copies of one point (host pytree): leaves [rows, ...]."""
    return _stack([point] * rows)


def point_rows(num_pairs: int, devices: int, paired_rows: int) -> int:
    """Rows of a call that trains one point alone on `num_pairs` seed rows (its baseline's scores on those
    seeds being known already), laid out so that each run gives the bits it gives in the paired call of
    `paired_rows` rows (`pairs`): `num_pairs` rounded up to a multiple of `devices`, and at least two per device
    where the paired call has two or more. XLA compiles a per-device batch of one row differently from a larger
    one, while any two batches of two or more rows give every row the same bits (measured on CPU, MinAtar:
    9, 5 and 2 rows per device agree bit for bit, 1 does not)."""
    rows = -(-num_pairs // devices) * devices
    if rows == devices and paired_rows >= 2 * devices:
        rows = 2 * devices
    return rows


def _padded_keys(keys: np.ndarray, blocks: int, rows: int) -> np.ndarray:
    """Keys [p, S, 2] repeated `blocks` times, then filler rows (keys[0], results dropped) up to [rows, S, 2]."""
    keys = np.asarray(keys)
    filler = np.broadcast_to(keys[:1], (rows - blocks * keys.shape[0], *keys.shape[1:]))
    return np.ascontiguousarray(np.concatenate([keys] * blocks + [filler]))


def point_keys(keys: np.ndarray, rows: int) -> np.ndarray:
    """Keys [p, S, 2] of one point's p seed rows -> [rows, S, 2]: filler rows reuse keys[0] (their results are
    dropped)."""
    return _padded_keys(keys, 1, rows)


def pair_keys(keys: np.ndarray, rows: int) -> np.ndarray:
    """Keys [p, S, 2] of p pairs -> [rows, S, 2]: pair j's meta row and PPO row train on keys[j]; filler rows
    reuse keys[0] (their results are dropped)."""
    return _padded_keys(keys, 2, rows)


def run_mean(returns: np.ndarray) -> float:
    """Mean over the finite runs of a block of rows x seeds; NaN when none is finite (all diverged)."""
    return float(seed_mean(np.asarray(returns, np.float64), None, diverged="skip"))


def relative(scores: np.ndarray, ppo: float, scale: float) -> np.ndarray:
    """Members' scores [P] against PPO's on the same keys, in units of `scale` (see the module docstring).
    NaN stays NaN (a diverged member); all NaN when PPO itself has no score (no episode finished on any
    seed): the task says nothing then."""
    scores = np.asarray(scores, np.float64)
    if not np.isfinite(ppo):
        return np.full_like(scores, np.nan)
    return 1.0 + (scores - ppo) / scale


def combine_tasks(per_task: list[np.ndarray], ppo: list[float]) -> np.ndarray:
    """Mean over the tasks whose PPO control has a score; all NaN (an uninformative generation) if none has."""
    informative = [s for s, c in zip(per_task, ppo, strict=True) if np.isfinite(c)]
    if not informative:
        return np.full_like(np.asarray(per_task[0], np.float64), np.nan)
    return np.mean(np.stack(informative), axis=0)
