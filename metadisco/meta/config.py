"""The meta-training config: a YAML file read into frozen dataclasses, with `--set key=value` overrides.

    objective:      {drift: {kind: lpo}, ...}       the objective spec (Objective.from_spec)
    tasks:          [{env, timesteps, seeds, preset, train, baseline}, ...]   what each member is trained on;
                    `timesteps` may be a list of training lengths, one drawn per generation
    sampling:       {tasks_per_generation}          how many tasks each generation trains on (0: all)
    normalise:      fixed | paired                  fitness / |baseline| (fixed), or (x - random) / (ppo - random)
                                                    with PPO trained on the same seed keys every generation
    validation:     {tasks: [...], every}           meta-validation envs: the ES mean against PPO every k
                                                    generations; the best is kept as objective_best.msgpack
    strategy:       {name, population_size, sigma_init, lr, ...}             the evosax strategy (strategy.py)
    fitness:        final_return | mean_return
    generations, seed, eval_every, checkpoint_every, baseline_seeds, start, start_scale
    held_out_envs:  [ids]   envs meta-training never touches (read by evaluation); `ID@TIMESTEPS` gives an env
                            its own evaluation budget

Overrides address any key with dots, list entries by index: `strategy.sigma_init=0.05`,
`tasks.0.timesteps=65536`, `tasks.0.train.num_envs=8`. The value is parsed as YAML (`0.05`, `true`, `[a, b]`).
Unknown and missing keys are `UserError`s naming the key and the known ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from metadisco.config import split_assignment
from metadisco.errors import UserError, unknown_name_error
from metadisco.io import read_yaml
from metadisco.safe_yaml import check_plain_data, load_value
from metadisco.validate import check_float, check_int, shorten

_REQUIRED = dataclasses.MISSING


@dataclass(frozen=True)
class TaskConfig:
    """One training task: every member trains `seeds` agents on `env` for `timesteps` steps each."""

    env: str
    timesteps: int | tuple[int, ...]  # one length, or several: one is drawn per generation (lifetime sampling)
    seeds: int = 1
    preset: str | None = None  # trainer preset; default chosen from the env id
    train: dict[str, Any] = field(default_factory=dict)  # TrainConfig overrides, e.g. {num_envs: 8}
    baseline: float | None = None  # fitness normaliser (PPO's return); measured and cached when needed

    @property
    def lifetimes(self) -> tuple[int, ...]:
        """The training lengths this task can be trained at."""
        return self.timesteps if isinstance(self.timesteps, tuple) else (self.timesteps,)

    def overrides(self) -> list[str]:
        """`train` as key=value strings for `metadisco.config.apply_overrides`."""
        out = []
        for key, value in self.train.items():
            if isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            out.append(f"{key}={value}")
        return out


@dataclass(frozen=True)
class StrategyConfig:
    """The evosax strategy and its settings; see `metadisco.meta.strategy.make_strategy`.

    sigma / lr follow `value_g = max(init * decay**g, limit)`. `settings` holds the strategy's own parameters
    (fields of its evosax `Params`, e.g. crossover_rate, or simple constructor arguments, e.g. num_diff).
    """

    name: str
    population_size: int
    sigma_init: float | None = None  # None: the strategy's default
    sigma_decay: float = 1.0
    sigma_limit: float = 0.0
    lr: float | None = None  # None: the strategy's default optimiser
    lr_decay: float = 1.0
    lr_limit: float = 0.0
    optimizer: str = "adam"  # used when lr is given: adam | sgd
    fitness_shaping: str | None = None  # None: the strategy's default
    antithetic: bool | None = None  # Open_ES-style mirrored sampling; None: the strategy's default (on)
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SamplingConfig:
    """Per-generation task sampling (GROOVE, TA-LPG): each generation trains every member on
    `tasks_per_generation` tasks drawn without replacement (0: all), each at one of its `timesteps`, drawn from
    the key of (seed, generation); all members of a generation, so both halves of every antithetic pair, share
    the draw and the seeds."""

    tasks_per_generation: int = 0


@dataclass(frozen=True)
class ValidationConfig:
    """Meta-validation: envs distinct from the tasks and from `held_out_envs`. Every `every` generations (and at
    generation 0 and the last) the ES mean and PPO train on the same fixed seeds of each task (every listed
    length); the mean's PPO-normalised score picks the objective a run keeps (`objective_best.msgpack`)."""

    tasks: tuple[TaskConfig, ...] = ()
    every: int = 5


NORMALISERS = ("fixed", "paired")


@dataclass(frozen=True)
class MetaConfig:
    objective: dict[str, Any]
    tasks: tuple[TaskConfig, ...]
    strategy: StrategyConfig
    generations: int
    held_out_envs: tuple[str, ...]
    fitness: str = "final_return"
    seed: int = 0
    eval_every: int = 10  # evaluate the ES mean on fresh seeds every k generations (and after the last)
    checkpoint_every: int = 1
    baseline_seeds: int = 4  # seeds of PPO when a normaliser is measured
    start: str = "hidden"  # ES start point: hidden (baseline, random hidden layers) | zero (see meta/start.py)
    start_scale: float = 1.0
    sampling: SamplingConfig = SamplingConfig()
    normalise: str = "fixed"
    validation: ValidationConfig = ValidationConfig()

    def validate(self) -> MetaConfig:
        """Check every value once, where the config enters: names, types, finiteness, ranges, and sizes against
        this machine's memory (`metadisco.meta.checks`); a `UserError` names the first bad key."""
        from metadisco.meta.checks import check_meta_config

        check_meta_config(self)
        return self

    def to_dict(self) -> dict:
        plain = _to_plain(dataclasses.asdict(self))
        # Sections that older configs lacked are left out while they hold their defaults, so the resolved
        # config (and its digest, which --resume checks) of a run made before they existed is unchanged.
        for name in ("sampling", "normalise", "validation"):
            if getattr(self, name) == _DEFAULTS[name]:
                del plain[name]
        return plain

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None)


_DEFAULTS = {"sampling": SamplingConfig(), "normalise": "fixed", "validation": ValidationConfig()}


def _to_plain(value):
    if isinstance(value, dict):
        return {k: _to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------------------
# reading: plain data -> dataclasses, with the key path in every error


def _coerce(value: Any, annotation: Any, path: str) -> Any:
    """`value` (from YAML) as the type `annotation`, or a `UserError` naming `path`."""
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value is None and len(args) < len(typing.get_args(annotation)):
            return None
        sequence = [a for a in args if typing.get_origin(a) is tuple]
        if sequence and isinstance(value, (list, tuple)):  # e.g. `timesteps: [a, b]` for `int | tuple[int, ...]`
            return _coerce(value, sequence[0], path)
        return _coerce(value, args[0], path)
    if dataclasses.is_dataclass(annotation):
        return _from_dict(annotation, value, path)
    if origin is tuple:
        inner = typing.get_args(annotation)[0]
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if value is None:
            value = []
        if not isinstance(value, (list, tuple)):
            raise UserError(f"config key {path} must be a list, got {shorten(value)}")
        return tuple(_coerce(v, inner, f"{path}.{i}") for i, v in enumerate(value))
    if origin is dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise UserError(f"config key {path} must be a mapping, got {shorten(value)}")
        return dict(value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise UserError(f"config key {path} must be true or false, got {shorten(value)}")
    if annotation is int:
        # .inf and .nan are floats to YAML; int() of them would raise OverflowError / ValueError.
        return check_int(f"config key {path}", value)
    if annotation is float:
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = float(value)  # YAML reads 1e-3 (no dot) as a string
        return check_float(f"config key {path}", value)
    if annotation is str:
        if not isinstance(value, str):
            raise UserError(f"config key {path} must be a string, got {shorten(value)}")
        return value
    return value


def _from_dict(cls, data: Any, path: str):
    prefix = f"{path}." if path else ""
    if not isinstance(data, dict):
        raise UserError(f"config key {path or '(top level)'} must be a mapping, got {shorten(data)}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}
    for key in data:
        if key not in known:
            raise unknown_name_error(f"config key under {path}" if path else "config key", str(key), list(known))
    values = {}
    for name, f in known.items():
        if name not in data:
            if f.default is _REQUIRED and f.default_factory is _REQUIRED:
                raise UserError(f"config is missing the key {prefix}{name}")
            continue
        values[name] = _coerce(data[name], hints[name], f"{prefix}{name}")
    return cls(**values)


def _set_path(data: dict, key: str, value: Any) -> None:
    """Set `data[a][b][0]...` for key 'a.b.0...'; intermediate keys must exist except the last."""
    parts = key.split(".")
    key = shorten(key).strip("'")  # for messages
    node = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = shorten(".".join(parts[:depth])).strip("'") or "(top level)"
        if isinstance(node, list):
            if not (part.isascii() and part.isdigit()) or len(part) > 9 or int(part) >= len(node):
                raise UserError(f"--set {key}: {where} is a list of {len(node)} entries; "
                                f"use an index 0..{len(node) - 1}, got {shorten(part)}")
            index = int(part)
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value  # unknown keys are caught when the dataclasses are built
            else:
                if node.get(part) is None:
                    node[part] = {}
                node = node[part]
        else:
            raise UserError(f"--set {key}: {where} is a value, not a mapping or list")


def parse_config(data: Any, overrides: list[str] | tuple[str, ...] = ()) -> MetaConfig:
    """Build a validated `MetaConfig` from plain data (parsed YAML) and 'key=value' overrides."""
    import copy

    check_plain_data(data, "the config")  # before the deep copy: aliases of aliases expand there
    data = copy.deepcopy(data) if data is not None else {}
    if not isinstance(data, dict):
        raise UserError("a meta-training config must be a YAML mapping at the top level")
    for item in overrides:
        key, text = split_assignment(item)
        value = load_value(text, f"--set {key}") if text else None
        _set_path(data, key, value)
    check_plain_data(data, "the config with its --set values")
    return _from_dict(MetaConfig, data, "").validate()


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> MetaConfig:
    """Read a YAML config file; a missing or unparsable file is a `UserError`."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"no config file {str(path)!r}")
    return parse_config(read_yaml(path), overrides)
