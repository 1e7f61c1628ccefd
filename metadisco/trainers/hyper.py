"""Hyperparameters as data: the settings of a trainer's config that fix no shape, as a pytree of float32 leaves.

rejax (Liesen et al. 2024, "Speeding up reinforcement learning with JAX") splits an algorithm's settings into
static ones, which fix array shapes or the program's structure and are hashable under `jax.jit`, and traced
ones: plain numbers that can be vmapped, evolved, and changed without compiling again. An algorithm names its
traced settings with `Algorithm.hyper`, a NamedTuple class (`metadisco.trainers.traced.Hyper`'s lr, gamma and
gae_lambda, then traced options of its own: PPO's `PPOHyper`); the functions here work for any algorithm's config:

    hyper = hyper_of(config)        # its algorithm's Algorithm.hyper of float32 scalars: the config's own values
    static = static_of(config)      # the config with those fields None: the key of a compiled program
    train = make_train(static, env, objective)
    train(key, meta, hyper)         # one program for every learning rate, gamma, ...

A sweep stacks hypers along a leading run axis (`stack`); PBT copies and perturbs them row by row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from metadisco.core.errors import UserError, unknown_name_error


def hyper_class(config) -> type:
    """The NamedTuple class of the config's traced settings: its algorithm's `Algorithm.hyper`."""
    from metadisco.trainers.algorithm import get_algorithm

    return get_algorithm(config.algorithm).hyper


def traced_fields(config) -> tuple[str, ...]:
    """The names of the config's traced settings, in the order of its `hyper_class`."""
    return hyper_class(config)._fields


def is_static(config) -> bool:
    """Whether every traced setting of `config` is None (it was made by `static_of`)."""
    return all(config.setting(name) is None for name in traced_fields(config))


def hyper_of(config) -> Any:
    """The config's traced settings as its `hyper_class` of float32 numpy scalars."""
    if is_static(config):
        raise ValueError("a static config holds no hyperparameters; pass them to the trainer")
    return hyper_class(config)(**{name: np.float32(config.setting(name)) for name in traced_fields(config)})


def static_of(config):
    """`config` with its traced settings None: equal for configs that differ only in traced settings, so a
    compiled program keyed by it serves all of them (and code that reads a traced setting from it fails)."""
    return config.with_settings(dict.fromkeys(traced_fields(config)))


def split_config(config) -> tuple[Any, Any]:
    """A trainer builder's first step: `config` validated, as (its static config, its traced values as `hyper_of`
    gives them, or None when `config` is static already, and the trainer then needs `hyper` at every call)."""
    config.validate()
    return static_of(config), (None if is_static(config) else hyper_of(config))


def check_traced(config, names, where: str = "hyperparameters") -> None:
    """Each of `names` is a traced setting of `config`; else a one-line `UserError` saying `where`, and whether
    the name is a static setting or unknown."""
    from metadisco.trainers.algorithm import not_read_error, readers

    traced = traced_fields(config)
    for name in names:
        if name not in traced:
            if readers(name) and config.algorithm not in readers(name):
                raise UserError(f"{where}: {not_read_error(name, config.algorithm)}")
            if _has_setting(config, name):
                raise UserError(f"{where}: {name} fixes the shape or structure of the trained program, so it "
                                f"cannot vary between runs of one program; traced settings are {', '.join(traced)}")
            raise unknown_name_error(f"{where}: hyperparameter", name, list(traced))


def with_values(config, values: Mapping[str, float], where: str = "hyperparameters"):
    """`config` with traced settings replaced by `values` ({name: number}), validated as the config is: an
    unknown or static name, or a value out of range, is a one-line `UserError` that says `where` it came from."""
    check_traced(config, values, where)
    try:
        return config.with_settings({k: float(v) for k, v in values.items()}).validate()
    except UserError as e:
        raise UserError(f"{where}: {e}") from None


def _has_setting(config, name: str) -> bool:
    try:
        config.setting(name)
    except AttributeError:
        return False
    return True


def stack(hypers: Sequence[Any]) -> Any:
    """Hypers of one class -> one hyper whose leaves are [len(hypers)] float32 arrays (a run axis)."""
    cls = type(hypers[0])
    return cls(*(np.asarray([getattr(h, name) for h in hypers], np.float32) for name in cls._fields))


def row(hyper: Any, i: int) -> dict[str, float]:
    """Row `i` of a stacked hyper as {name: float} (for JSON and messages)."""
    return {name: float(np.asarray(value)[i]) for name, value in hyper._asdict().items()}


def check_grid(tune: Sequence[tuple[str, Sequence[float]]], where: str = "", hint: str = "NAME=V1,V2,...") -> None:
    """A tuning grid ((setting, (values...)), ...) is well formed: no setting twice, and each setting's values
    non-empty, finite and distinct; else a one-line `UserError` (prefixed by `where`, and suggesting `hint`).
    Whether each value is one the trainer can take is `with_values`'s check, against a config."""
    import math

    prefix = f"{where}: " if where else ""
    names = [name for name, _ in tune]
    if len(set(names)) != len(names):
        raise UserError(f"{prefix}setting {sorted({n for n in names if names.count(n) > 1})[0]!r} is tuned twice; "
                        "give each setting's grid once")
    for name, values in tune:
        if not values:
            raise UserError(f"{prefix}tuning grid of {name!r} is empty; give {hint}")
        bad = [v for v in values if not math.isfinite(v)]
        if bad:
            raise UserError(f"{prefix}tuning grid of {name!r} has {bad[0]!r}; give finite numbers")
        if len(set(values)) != len(values):
            raise UserError(f"{prefix}tuning grid of {name!r} repeats a value; give each value once")


def grid_product(tune: Sequence[tuple[str, Sequence[float]]]) -> list[dict[str, float]]:
    """Every point of a tuning grid as {setting: value}: the product of the settings' values, the first setting
    slowest, in the order given (empty grid: no points)."""
    import itertools

    if not tune:
        return []
    names = [name for name, _ in tune]
    return [dict(zip(names, point, strict=True)) for point in itertools.product(*(v for _, v in tune))]
