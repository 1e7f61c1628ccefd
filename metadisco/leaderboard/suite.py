"""A leaderboard suite: the envs every entry is judged on, with their budgets, the tuning grid, the seed sets and
the score, declared as data (`metadisco/leaderboard/suites/NAME.yaml`, shipped in the package) so that one
protocol judges every entry.

    suite = load_suite("cpu")           # a shipped suite by name, or a YAML file's path
    suite.envs                          # ((env id, env steps), ...)
    suite.grid(preset_lr)               # the learning rates an entry whose preset has `preset_lr` is tuned over

The learning-rate grid is relative (`lr_scales`: multiples of each entry's own preset learning rate on the env), so
that PPO (2.5e-4 on CartPole) and DQN (2.5e-4) and an update rule's agent (1e-2) each get the same tuning budget
around the step size its own authors chose, rather than one absolute grid that suits one algorithm.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from metadisco.core.errors import UserError, unknown_name_error
from metadisco.core.io import read_yaml

SCORES = ("final_return", "mean_return", "eval_return")
_FIELDS = {"name", "summary", "envs", "entries", "lr_scales", "selection_seeds", "report_seeds", "seed",
           "eval_episodes", "score"}


@dataclass(frozen=True)
class Suite:
    """name, summary; envs: ((env id, env steps), ...); entries: the entry names it judges (`entries.yaml`), the
    reference first; lr_scales: the tuning grid as multiples of each entry's preset lr; selection_seeds and
    report_seeds: seeds per grid point to choose on, and per chosen point to report (their keys split from
    `seed`, disjoint); eval_episodes: deterministic episodes each trained agent plays; score: what chooses the
    grid point and ranks the table (one of SCORES; every score is reported)."""

    name: str
    summary: str
    envs: tuple[tuple[str, int], ...]
    entries: tuple[str, ...]
    lr_scales: tuple[float, ...] = (0.5, 1.0, 2.0)
    selection_seeds: int = 8
    report_seeds: int = 16
    seed: int = 0
    eval_episodes: int = 16
    score: str = "final_return"

    @property
    def reference(self) -> str:
        """The entry whose tuned score is 1 in the normalisation (the random policy's is 0): the first."""
        return self.entries[0]

    def grid(self, preset_lr: float) -> list[float]:
        """The learning rates of an entry whose preset lr is `preset_lr`, as float32 values (what trains)."""
        return [float(np.float32(preset_lr * s)) for s in self.lr_scales]

    def to_plain(self) -> dict:
        """What changes a cell's numbers, for the board's plan (entries are not in it: they are added over time)."""
        return {"name": self.name, "envs": [list(e) for e in self.envs], "lr_scales": list(self.lr_scales),
                "selection_seeds": self.selection_seeds, "report_seeds": self.report_seeds, "seed": self.seed,
                "eval_episodes": self.eval_episodes, "score": self.score}


def shipped_suites() -> dict[str, Path]:
    """{name: file} of the suites that ship with metadisco."""
    folder = importlib.resources.files("metadisco.leaderboard") / "suites"
    return {Path(str(p)).stem: Path(str(p)) for p in sorted(folder.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".yaml")}


def load_suite(name_or_path: str) -> Suite:
    """A shipped suite by name, or a suite file's path; a one-line `UserError` for anything wrong in it."""
    path = Path(name_or_path)
    if not (path.suffix or "/" in name_or_path):
        known = shipped_suites()
        if name_or_path not in known:
            raise unknown_name_error("suite", name_or_path, list(known))
        path = known[name_or_path]
    if not path.is_file():
        raise UserError(f"suite file {str(path)!r} does not exist; give a shipped suite "
                        f"({', '.join(shipped_suites())}) or a YAML file")
    return suite_from_dict(read_yaml(path), str(path))


def _positive_int(data: dict, key: str, where: str, default: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"{where}: {key} must be a positive integer, got {value!r}")
    return value


def suite_from_dict(data, where: str = "suite") -> Suite:
    """The `Suite` a YAML mapping declares (see `Suite`), every field checked."""
    from metadisco.envs import check_env_id

    if not isinstance(data, dict):
        raise UserError(f"{where}: a suite is a mapping with keys {', '.join(sorted(_FIELDS))}, got "
                        f"{type(data).__name__}")
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r}; a suite has {', '.join(sorted(_FIELDS))}")
    for key in ("name", "envs", "entries"):
        if key not in data:
            raise UserError(f"{where}: give {key}")
    envs = data["envs"]
    if not isinstance(envs, dict) or not envs:
        raise UserError(f"{where}: envs must map env ids to their env steps, e.g. {{CartPole-v1: 500000}}")
    for env, steps in envs.items():
        check_env_id(str(env))
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise UserError(f"{where}: env {env}: its env steps must be a positive integer, got {steps!r}")
    entries = data["entries"]
    if not isinstance(entries, list) or not entries or not all(isinstance(e, str) for e in entries):
        raise UserError(f"{where}: entries must be a list of entry names (the reference first), got {entries!r}")
    if len(set(entries)) != len(entries):
        raise UserError(f"{where}: entry {next(e for e in entries if entries.count(e) > 1)!r} is listed twice")
    scales = data.get("lr_scales", [0.5, 1.0, 2.0])
    if not isinstance(scales, list) or not scales or not all(
            isinstance(s, int | float) and not isinstance(s, bool) and np.isfinite(s) and s > 0 for s in scales):
        raise UserError(f"{where}: lr_scales must be a list of positive numbers (multiples of each entry's preset "
                        f"lr), got {scales!r}")
    score = data.get("score", "final_return")
    if score not in SCORES:
        raise unknown_name_error("score", str(score), SCORES)
    eval_episodes = data.get("eval_episodes", 16)
    if isinstance(eval_episodes, bool) or not isinstance(eval_episodes, int) or eval_episodes < 0:
        raise UserError(f"{where}: eval_episodes must be a whole number >= 0, got {eval_episodes!r}")
    if score == "eval_return" and not eval_episodes:
        raise UserError(f"{where}: score eval_return needs eval_episodes > 0")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise UserError(f"{where}: seed must be a whole number in [0, 2^31), got {seed!r}")
    return Suite(str(data["name"]), str(data.get("summary", "")), tuple((str(e), int(s)) for e, s in envs.items()),
                 tuple(entries), tuple(float(s) for s in scales),
                 _positive_int(data, "selection_seeds", where, 8), _positive_int(data, "report_seeds", where, 16),
                 seed, eval_episodes, score)
