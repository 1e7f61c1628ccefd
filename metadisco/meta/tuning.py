"""Tuned fitness: a member scored at its best point of a grid of traced settings, as the judge scores it.

The field's judges tune every method's learning rate (DiscoBench's `main.py` takes the best of
`linspace(LR, 10 LR, 10)`; `metadisco evaluate --tune`), so an objective meta-trained at one fixed learning rate
can win by changing the effective step size, a gain the judge removes (a learned value loss on CartPole: P 1.00
at the preset's lr, 0.00 tuned). With `fitness: {score: final_return, tune: {lr: [...]}}` every member, and PPO's
control, trains at every grid point; a member's fitness is its best point's seed-mean, and paired fitness
compares it with PPO at PPO's own best point on the same keys.

The grid is one more row axis of the population program: each row (member, control, padding) is repeated G
times, row (r, g) trains at grid point g (its traced settings are inputs, so the compiled program serves every
point), all in one call. Scores of one fixed point (the ES mean on fresh seeds, validation) call the same
compiled program once per grid point, so that they keep the bits and the cached PPO controls of the untuned
layout (`metadisco.meta.problem.MetaProblem.score_paired`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import jax
import numpy as np

from metadisco.core.stats import best_point
from metadisco.trainers.hyper import grid_product, with_values


def best_of(values) -> tuple[np.ndarray, np.ndarray]:
    """Seed-means at each grid point [..., G] -> (the best [...], its grid index [...]) by the package's one rule
    (`metadisco.core.stats.best_point`, each point's seed-mean its one score): the largest finite value, the first
    point on ties; NaN and index -1 where no point is finite (every point diverged). The values keep their float
    precision (an untuned score is bit for bit what it was)."""
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.floating):
        values = values.astype(np.float64)
    chosen = best_point(values[..., None])
    best = np.take_along_axis(values, np.maximum(chosen, 0)[..., None], axis=-1)[..., 0]
    return np.where(chosen < 0, np.nan, best).astype(values.dtype), chosen


@dataclass(frozen=True)
class Grid:
    """The points of a fitness tuning grid: {setting: value} each, the product of `fitness.tune`'s lists. An empty
    grid (no tuning) has one point, the task's own settings, so that untuned and tuned code paths are one."""

    points: tuple[dict[str, float], ...] = ()

    @classmethod
    def of(cls, tune: Mapping[str, tuple[float, ...]]) -> Grid:
        return cls(tuple(grid_product(list(tune.items()))))

    def __bool__(self) -> bool:
        return bool(self.points)

    @property
    def size(self) -> int:
        """G: rows per member (1 untuned)."""
        return max(1, len(self.points))

    def label(self, index: int) -> str | None:
        """Grid point `index` as 'lr=0.001' (settings joined by ','); None for -1 (no finite point)."""
        if index < 0 or not self.points:
            return None
        return ",".join(f"{name}={value:g}" for name, value in self.points[index].items())

    def labels(self) -> list[str]:
        return [self.label(g) for g in range(len(self.points))]

    def task_at(self, task, index: int):
        """`task` (a `metadisco.meta.tasks.Task`) with its trainer config at grid point `index`: the same compiled
        program, since the grid's settings are traced."""
        config = with_values(task.train_config, self.points[index], f"fitness.tune ({task.name})")
        return replace(task, train_config=config)

    def tasks_at(self, tasks: list, index: int) -> list:
        """`tasks` at grid point `index` (`task_at`); untuned, `tasks` themselves."""
        return [self.task_at(task, index) for task in tasks] if self.points else tasks

    def expand(self, rows):
        """Host rows (pytree, leaves [M, ...]) -> [M * G, ...]: each row repeated G times, row (r, g) at r * G + g."""
        return jax.tree.map(lambda x: np.repeat(np.asarray(x), self.size, axis=0), rows)

    def set_points(self, hypers):
        """Stacked hyperparameters of expanded rows (leaves [M * G]) with each row's grid point's values: row
        r * G + g gets point g."""
        rows = int(np.shape(jax.tree.leaves(hypers)[0])[0])
        values = {name: np.tile(np.asarray([p[name] for p in self.points], np.float32), rows // self.size)
                  for name in self.points[0]}
        return hypers._replace(**values)

    def histogram(self, chosen) -> dict[str, int]:
        """How many of `chosen` (grid indices, -1: none) picked each point, every point listed; 'none' counts
        members with no finite point, when there are any."""
        chosen = np.asarray(chosen).reshape(-1)
        out = {label: int(np.sum(chosen == g)) for g, label in enumerate(self.labels())}
        if np.any(chosen < 0):
            out["none"] = int(np.sum(chosen < 0))
        return out


def chosen_report(grid, tasks, chosen, baseline_chosen) -> dict:
    """A generation's chosen grid points per task name: each member's index into `grid.labels()` (-1: none),
    their histogram, and the baseline's point (paired)."""
    out = {}
    for task, picks in zip(tasks, chosen, strict=True):
        entry = {"chosen": [int(c) for c in picks], "histogram": grid.histogram(picks)}
        if baseline_chosen is not None:
            entry["baseline"] = grid.label(baseline_chosen[task.name])
        out[task.name] = entry
    return out
