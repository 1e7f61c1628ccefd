"""A search space over a trainer's traced settings: a range per setting, on a log or a linear scale.

Written in a config (`space:` of a sweep or PBT config) as

    lr: {low: 1.0e-5, high: 1.0e-1}              # log scale: the default for lr, max_grad_norm and vf_coef
    ent_coef: {low: 0.0, high: 0.05}             # linear: the default for the others
    gae_lambda: {low: 0.8, high: 1.0, log: false}
    gamma: [0.95, 0.99, 0.999]                   # a list: exactly these values (a grid's points)

Positions inside a range are "units" in [0, 1], uniform on the range's scale (`to_unit` / `from_unit`): grids
are evenly spaced in units and random points are uniform in units, so a step means the same factor anywhere in
a log range. A meta-training config's `hyper:` section searches differently, by offsets from each task's own
values with no range to fill (`metadisco.meta.hyper_search`); it shares the natural scales (`NATURAL_LOG`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from metadisco.core.coerce import check_float, coerce
from metadisco.core.errors import UserError, shorten
from metadisco.trainers.hyper import with_values

# Settings whose natural scale is logarithmic (a factor of 10 matters the same anywhere in the range).
NATURAL_LOG = frozenset({"lr", "max_grad_norm", "vf_coef"})


@dataclass(frozen=True)
class Dimension:
    """One searched setting: its range and scale, or an explicit list of values."""

    name: str
    low: float
    high: float
    log: bool
    values: tuple[float, ...] = ()  # explicit values; then low / high are their min / max

    def to_unit(self, x):
        """Values -> positions in [0, 1] on the range's scale (any array shape)."""
        x = np.asarray(x, np.float64)
        if self.high == self.low:
            return np.zeros_like(x)
        if self.log:
            return (np.log(x) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (x - self.low) / (self.high - self.low)

    def from_unit(self, u):
        """Positions (clipped to [0, 1]) -> values in the range."""
        u = np.clip(np.asarray(u, np.float64), 0.0, 1.0)
        if self.log:
            return np.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        return self.low + u * (self.high - self.low)

    def clip(self, x):
        return np.clip(np.asarray(x, np.float64), self.low, self.high)

    def grid(self, num: int) -> tuple[float, ...]:
        """The explicit values, or `num` points evenly spaced on the range's scale (ends included)."""
        if self.values:
            return self.values
        return tuple(float(v) for v in self.from_unit(np.linspace(0.0, 1.0, num)))


def parse_dimension(name: str, spec, config, where: str) -> Dimension:
    """One entry of a space section, its bounds checked as values of `config`'s setting (`with_values`)."""
    key = f"{where}.{name}"
    if isinstance(spec, (list, tuple)):
        if not spec:
            raise UserError(f"{key} is an empty list; give values, or {{low: A, high: B}}")
        values = tuple(coerce(v, float, f"{key}.{i}") for i, v in enumerate(spec))
        for v in values:
            with_values(config, {name: v}, where)
        log = name in NATURAL_LOG and min(values) > 0
        return Dimension(name, min(values), max(values), log, values)
    if not isinstance(spec, Mapping):
        raise UserError(f"{key} must be {{low: A, high: B[, log: true|false]}} or a list of values, "
                        f"got {shorten(spec)}")
    unknown = set(spec) - {"low", "high", "log"}
    if unknown or not {"low", "high"} <= set(spec):
        raise UserError(f"{key} takes low, high and optionally log, got keys {sorted(map(str, spec))}")
    low = check_float(f"{key}.low", coerce(spec["low"], float, f"{key}.low"))
    high = check_float(f"{key}.high", coerce(spec["high"], float, f"{key}.high"))
    if not low <= high:
        raise UserError(f"{key}: low {low:g} must not exceed high {high:g}")
    for v in (low, high):
        with_values(config, {name: v}, where)
    log = coerce(spec["log"], bool, f"{key}.log") if "log" in spec else name in NATURAL_LOG
    if log and low <= 0:
        raise UserError(f"{key}: a log scale needs low > 0, got {low:g}; set log: false or a positive low")
    return Dimension(name, low, high, log)


def parse_space(section, config, where: str = "space") -> tuple[Dimension, ...]:
    """A space section (mapping setting -> range or values) -> its dimensions, in the order written."""
    if not isinstance(section, Mapping) or not section:
        raise UserError(f"{where} must be a mapping of settings to ranges, e.g. {{lr: {{low: 1e-5, high: 1e-2}}}}; "
                        f"got {shorten(section)}")
    return tuple(parse_dimension(str(name), spec, config, where) for name, spec in section.items())


def space_section(value, path: str) -> dict:
    """A config's space section as read (a config dataclass's parser); `parse_space` checks it against the
    trainer config once that is known."""
    if not isinstance(value, Mapping):
        raise UserError(f"config key {path} must be a mapping of settings to ranges, got {shorten(value)}")
    return dict(value)


def space_to_plain(space: tuple[Dimension, ...]) -> dict:
    """The space as written (for a resolved config)."""
    return {d.name: list(d.values) if d.values else {"low": d.low, "high": d.high, "log": d.log} for d in space}


def grid_points(space: tuple[Dimension, ...], num: int) -> list[dict[str, float]]:
    """Every combination of the dimensions' grids (`Dimension.grid(num)`), the last dimension varying fastest."""
    return [dict(zip((d.name for d in space), combo, strict=True))
            for combo in itertools.product(*(d.grid(num) for d in space))]


def random_points(space: tuple[Dimension, ...], num: int, rng: np.random.Generator) -> list[dict[str, float]]:
    """`num` points drawn uniformly in units (log-uniform on a log range); an explicit list is drawn from."""
    columns = {}
    for d in space:
        if d.values:
            columns[d.name] = np.asarray(d.values)[rng.integers(0, len(d.values), num)]
        else:
            columns[d.name] = d.from_unit(rng.uniform(0.0, 1.0, num))
    return [{name: float(col[i]) for name, col in columns.items()} for i in range(num)]
