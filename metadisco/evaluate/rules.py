"""The rules an evaluation judges by: what it scores, and how each method's settings are tuned.

A reviewer's first question of a learned objective is whether it still wins when the baselines' learning rate is
tuned. `Rules.tune` gives every method, baselines and objectives alike, the same grid of traced settings
(`metadisco.trainers.hyper`; the learning rate is traced, so one compiled program serves the whole grid); each
method is reported at its own best grid point, beside its untuned figures (the preset's values). Two ways to
choose the best point:

- `fresh_seeds` (the honest default): each point is scored on *selection* seeds (their own keys, disjoint from
  the reported seeds), the best point chosen there, and the method then trained at that point on the reported
  seeds. The reported score never saw the choice.
- `same_seeds` (DiscoBench's rule, to reproduce its numbers): every point is trained on the reported seeds and
  the best one reported; the figure is optimistic by the maximum over the grid.

The best point is the one with the most scored seeds, then the highest mean score over them (a point where
seeds diverge or finish no episode is worse than one where none do, whatever its mean): the package's one rule,
`metadisco.core.stats.best_point`, which meta-training's tuned fitness uses too.

Scores (`SCORES`): `final_return` (mean return of the episodes ending in the last 5% of updates),
`mean_return` (every episode of training: the area under the learning curve) and `eval_return` (the mean return
of `eval_episodes` deterministic episodes of the trained agent's mode, DiscoBench's and OPEN's score).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from metadisco.core.errors import SettingError, UserError
from metadisco.trainers.greedy import DEFAULT_EVAL_EPISODES
from metadisco.trainers.hyper import check_grid, grid_product
from metadisco.trainers.metrics import FITNESS_FNS

SCORES = tuple(FITNESS_FNS)  # final_return, mean_return, eval_return: every score of a trained run
TUNE_RULES = ("fresh_seeds", "same_seeds")


@dataclass(frozen=True)
class Rules:
    """score: what the statistics rank (one of SCORES). eval_episodes: deterministic episodes per trained agent
    (0: none; `eval_return` needs some). tune: ((setting, (values...)), ...), the grid is their product (empty:
    no tuning). tune_rule: one of TUNE_RULES."""

    score: str = "final_return"
    eval_episodes: int = 0
    tune: tuple[tuple[str, tuple[float, ...]], ...] = field(default_factory=tuple)
    tune_rule: str = "fresh_seeds"

    def __post_init__(self):
        if self.score not in SCORES:
            from metadisco.core.errors import unknown_name_error

            raise unknown_name_error("score", self.score, SCORES)
        if self.tune_rule not in TUNE_RULES:
            from metadisco.core.errors import unknown_name_error

            raise unknown_name_error("tuning rule", self.tune_rule, TUNE_RULES)
        if self.score == "eval_return" and self.eval_episodes == 0:
            object.__setattr__(self, "eval_episodes", DEFAULT_EVAL_EPISODES)
        if not isinstance(self.eval_episodes, int) or self.eval_episodes < 0:
            raise UserError(f"evaluation episodes must be a whole number >= 0, got {self.eval_episodes!r}")
        check_grid(self.tune)

    @property
    def scores(self) -> tuple[str, ...]:
        """The scores this evaluation records: eval_return only when episodes are played."""
        return SCORES if self.eval_episodes else SCORES[:2]

    def grid(self) -> list[dict[str, float]]:
        """Every grid point as {setting: value}, in the order the grids were given (empty: no tuning)."""
        return grid_product(self.tune)

    def to_plain(self) -> dict:
        return {"score": self.score, "eval_episodes": self.eval_episodes,
                "tune": {name: list(values) for name, values in self.tune}, "tune_rule": self.tune_rule}


def parse_tune(text: str) -> tuple[str, tuple[float, ...]]:
    """'lr=1e-3,2.5e-3,5e-3' -> ("lr", (0.001, 0.0025, 0.005)); bad text is a one-line UserError."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name or not values.strip():
        raise SettingError(f"tune {text!r}: give SETTING=V1,V2,... (e.g. lr=1e-3,2.5e-3,5e-3)", ("tune",))
    out = []
    for part in values.split(","):
        try:
            out.append(float(part))
        except ValueError:
            raise SettingError(f"tune {text!r}: {part.strip()!r} is not a number; give SETTING=V1,V2,...",
                               ("tune",)) from None
    return name, tuple(out)


def chosen_point(scores) -> int:
    """The index of the best grid point by its [G, seeds] scores (`metadisco.core.stats.best_point`: the most scored
    seeds, then the highest mean, the first of equals); the first point where none scored, so that a method whose
    every point diverged is still reported, at the grid's first point, with its diverged seeds."""
    from metadisco.core.stats import best_point

    return max(int(best_point(np.stack([np.asarray(s, np.float64) for s in scores]))), 0)
