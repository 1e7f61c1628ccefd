"""Hyperparameters evolved with the objective: a meta-training config's `hyper:` section.

    hyper:
      lr: {scale: log}                         # value = task's lr * exp(step * u), step 1 by default
      ent_coef: {scale: linear, step: 0.01}    # value = task's ent_coef + step * u
      gae_lambda: {step: 0.05, low: 0.8}       # linear (its natural scale); clipped to [0.8, 1]

Each named setting (a traced one of the tasks' algorithm, `Algorithm.hyper`: lr, gamma and gae_lambda of every
algorithm, PPO's ent_coef and vf_coef, the max_grad_norm of PPO, PQN and DQN) adds one coordinate `u` to the ES's
search, beside the objective's meta-parameters. `u` is an offset in units from *each task's own value* (its preset
and `train:` settings), shared by every task: on a log scale a unit multiplies the setting by exp(step), on a linear
scale it adds step. The ES starts at u = 0, so generation 0 trains every task at exactly its own settings (PPO with
the task's values, as the objective at its start is PPO), and the ES's sigma means the same relative change on every
task. `scale` defaults to log for lr, max_grad_norm and vf_coef and to linear for the others
(`metadisco.trainers.hyper_space.NATURAL_LOG`); a linear scale needs `step` (the change one unit makes, in the
setting's own units). Values are clipped to the setting's range
(gamma and gae_lambda to [0, 1], the others to >= 0) and to the optional `low` / `high`, which every task's own
value must lie within (so u = 0 is each task's value exactly).

The ES point is then {"objective": meta-parameters, "hyper": {name: u}} (`HyperSearch.point`); the objective's
pieces never see the units: `HyperSearch.split` takes them off before training, and each member's row of the
population program gets its own traced settings (`task_hypers`), a traced argument, so nothing compiles again. The PPO
control row of paired normalisation has u = 0: the task's own values. Without a `hyper:` section the ES point is
the objective's meta-parameters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from metadisco.core.coerce import check_float, coerce
from metadisco.core.errors import UserError, shorten, unknown_name_error
from metadisco.trainers.config import DEFAULT
from metadisco.trainers.hyper import hyper_of, traced_fields, with_values
from metadisco.trainers.hyper_space import NATURAL_LOG

SCALES = ("log", "linear")
KEYS = ("scale", "step", "low", "high")
# Where a setting's value must stay, whatever the ES asks for: the trainer's ranges (TrainConfig.validate), with
# the open ends of lr, max_grad_norm and gamma closed at 0 (a log scale never reaches 0).
RANGES = {"lr": (0.0, math.inf), "gamma": (0.0, 1.0), "gae_lambda": (0.0, 1.0), "ent_coef": (0.0, math.inf),
          "vf_coef": (0.0, math.inf), "max_grad_norm": (0.0, math.inf)}
# The ES point's two parts when a hyper section is given.
OBJECTIVE, HYPER = "objective", "hyper"


@dataclass(frozen=True)
class Searched:
    """One evolved setting: its scale, the step one unit makes, and the bounds its values are clipped to."""

    name: str
    log: bool
    step: float
    low: float | None = None
    high: float | None = None

    @property
    def bounds(self) -> tuple[float, float]:
        lo, hi = RANGES[self.name]
        return (lo if self.low is None else max(lo, self.low), hi if self.high is None else min(hi, self.high))

    def values(self, own: float, units) -> np.ndarray:
        """The setting's values (float64) for units `u` around a task's own value `own`: own * exp(step * u)
        or own + step * u, clipped to the bounds; u = 0 gives `own` exactly."""
        u = np.asarray(units, np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            value = own * np.exp(u * self.step) if self.log else own + u * self.step
        return np.clip(value, *self.bounds)

    def to_plain(self) -> dict:
        out = {"scale": "log" if self.log else "linear", "step": self.step}
        out.update({k: getattr(self, k) for k in ("low", "high") if getattr(self, k) is not None})
        return out


@dataclass(frozen=True)
class HyperSearch:
    """The settings a meta-training run evolves (empty: none; the ES point is the objective's meta-parameters)."""

    searched: tuple[Searched, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.searched)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.searched)

    def to_plain(self) -> dict:
        return {s.name: s.to_plain() for s in self.searched}

    # -- the ES point -------------------------------------------------------------------------------------

    def point(self, meta) -> Any:
        """The ES point of the objective's meta-parameters `meta` with every unit at zero (`meta` itself
        without a hyper section)."""
        return self.join(meta, {name: np.float32(0.0) for name in self.names})

    def join(self, meta, units: Mapping[str, Any]) -> Any:
        """The ES point of meta-parameters `meta` and hyper units `units` (`meta` without a hyper section)."""
        return {OBJECTIVE: meta, HYPER: dict(units)} if self else meta

    def split(self, point) -> tuple[Any, dict | None]:
        """(objective meta-parameters, units {name: value} or None) of an ES point (or rows of points)."""
        if not self:
            return point, None
        return point[OBJECTIVE], point[HYPER]

    # -- values -------------------------------------------------------------------------------------------

    def task_hypers(self, train_config, units: Mapping[str, Any]) -> Any:
        """Each row's hyperparameters on a task: `units` {name: [M]} around the task's own settings
        (`train_config`); the settings not searched keep the task's values. Leaves [M] float32."""
        own = hyper_of(train_config)
        rows = int(np.shape(units[self.names[0]])[0])
        columns = {name: np.full(rows, getattr(own, name), np.float32) for name in type(own)._fields}
        for s in self.searched:
            columns[s.name] = s.values(float(train_config.setting(s.name)), units[s.name]).astype(np.float32)
        return type(own)(**columns)

    def task_values(self, train_config, units: Mapping[str, Any]) -> dict[str, float]:
        """The searched settings of one point (`units` {name: scalar}) on a task, as the trainer gets them."""
        return {s.name: float(np.float32(s.values(float(train_config.setting(s.name)), units[s.name])))
                for s in self.searched}


def parse_hyper(value: Any, path: str = "hyper") -> HyperSearch:
    """A config's `hyper:` section (mapping setting -> {scale, step, low, high}, or null for the defaults) as a
    `HyperSearch`; a `UserError` names the first bad key and what would be right."""
    if value is None:
        return HyperSearch()
    if not isinstance(value, Mapping):
        raise UserError(f"config key {path} must be a mapping of settings to {{scale: log|linear, step: X}}, "
                        f"e.g. {{lr: {{scale: log}}}}; got {shorten(value)}")
    return HyperSearch(tuple(_parse_one(str(name), spec, path) for name, spec in value.items()))


def _parse_one(name: str, spec: Any, path: str) -> Searched:
    key = f"{path}.{name}"
    # PPO's traced settings include every built-in algorithm's: an unknown or static setting gets its error here, one
    # of another algorithm the tasks' check (`check_against_tasks`).
    traced = traced_fields(DEFAULT)
    if name not in traced:
        with_values(DEFAULT, {name: 0.0}, path)  # names why: a static setting, or an unknown one
        raise unknown_name_error(f"{path}: hyperparameter", name, traced)
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise UserError(f"{key} must be a mapping {{scale: log|linear, step: X, low: A, high: B}} (each optional "
                        f"but step on a linear scale), got {shorten(spec)}")
    for k in spec:
        if k not in KEYS:
            raise unknown_name_error(f"key under {key}", str(k), KEYS)
    scale = coerce(spec.get("scale", "log" if name in NATURAL_LOG else "linear"), str, f"{key}.scale")
    if scale not in SCALES:
        raise unknown_name_error(f"{key}.scale", scale, SCALES)
    log = scale == "log"
    if "step" not in spec and not log:
        raise UserError(f"{key}: a linear scale needs step, the change one unit of the ES's search makes in "
                        f"{name} (e.g. step: 0.01), or scale: log")
    step = check_float(f"{key}.step", coerce(spec.get("step", 1.0), float, f"{key}.step"), 0.0, lo_open=True)
    bounds = {}
    for end in ("low", "high"):
        if spec.get(end) is not None:
            bounds[end] = check_float(f"{key}.{end}", coerce(spec[end], float, f"{key}.{end}"))
            with_values(DEFAULT, {name: bounds[end]}, f"{key}.{end}")
    if "low" in bounds and "high" in bounds and not bounds["low"] <= bounds["high"]:
        raise UserError(f"{key}: low {bounds['low']:g} must not exceed high {bounds['high']:g}")
    return Searched(name, log, step, bounds.get("low"), bounds.get("high"))


def check_against_tasks(search: HyperSearch, tasks: list[tuple[str, Any]], algorithm: str) -> None:
    """Checks that need the tasks' resolved trainer configs (`tasks`: [(label, TrainConfig)]): a setting the
    algorithm ignores, a task whose own value a log scale cannot move (0), or one outside `low` / `high` (then
    u = 0 would not be the task's value)."""
    from metadisco.trainers.algorithm import readers

    for s in search.searched:
        owners = readers(s.name)
        if owners and algorithm not in owners:
            raise UserError(f"hyper.{s.name}: algorithm {algorithm} ignores {s.name}; it is a setting of "
                            f"{' and '.join(owners)}")
        lo, hi = s.bounds
        for label, config in tasks:
            own = float(config.setting(s.name))
            if s.log and own == 0:
                raise UserError(f"hyper.{s.name}: {label} has {s.name} 0, which a log scale (a factor) cannot "
                                f"move; use scale: linear with a step, or give the task a positive {s.name}")
            if not lo <= own <= hi:
                raise UserError(f"hyper.{s.name}: {label} has {s.name} {own:g}, outside [{lo:g}, {hi:g}]; the "
                                "search starts at each task's own value, so widen low / high to include it")
