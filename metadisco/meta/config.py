"""The meta-training config: a YAML file read into frozen dataclasses, with `--set key=value` overrides.

    plugins:        [my_module, ...]                modules that register their own pieces / envs (metadisco.plugins)
    objective:      {drift: {kind: lpo}, ...}       the objective spec (Objective.from_spec)
    tasks:          [{env, timesteps, seeds, preset, train, baseline}, ...]   what each member is trained on;
                    `timesteps` may be a list of training lengths, one drawn per generation
    sampling:       {tasks_per_generation, scale}   how many tasks each generation trains on (0: all); scale:
                                                    {lr: [lo, hi]} draws each task's traced settings per generation,
                                                    as its own value times a log-uniform factor in [lo, hi]
    normalise:      fixed | paired                  fitness / |baseline| (fixed), or (x - random) / (ppo - random)
                                                    with PPO trained on the same seed keys every generation
    combine:        mean | rank                     what the ES is told: the mean over the generation's tasks of
                                                    members' scores (mean), or of their centred ranks within
                                                    each task (rank: every task counts equally); metrics.jsonl
                                                    reports the mean either way
    validation:     {tasks: [...], every}           meta-validation envs: the ES mean against PPO every k
                                                    generations; the best is kept as objective_best.msgpack
    strategy:       {name, population_size, sigma_init, lr, ...}             the evosax strategy (strategy.py)
    hyper:          {lr: {scale: log}, ...}         trainer settings evolved beside the objective, as offsets
                                                    from each task's own values (hyper_search.py)
    fitness:        final_return | mean_return
    generations, seed, eval_every, checkpoint_every, baseline_seeds, start, start_scale
    held_out_envs:  [ids]   envs meta-training never touches (read by evaluation); `ID@TIMESTEPS` gives an env
                            its own evaluation budget

Overrides address any key with dots, list entries by index: `strategy.sigma_init=0.05`,
`tasks.0.timesteps=65536`, `tasks.0.train.num_envs=8`. The value is parsed as YAML (`0.05`, `true`, `[a, b]`).
Unknown and missing keys are `UserError`s naming the key and the known ones.

Every section is read once into frozen, typed values: `objective` into an `Objective`, each task's `train` into
a `Settings` of values typed by `TrainConfig`'s fields, `strategy.settings` into a `Settings`, all by the one
coercion engine (`metadisco.validate.coerce`). `to_dict()` writes each section back as it was written (after
`--set`), so the resolved config.yaml, and the digest that `--resume` checks, are those of earlier versions.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from metadisco.config import split_assignment, train_setting
from metadisco.errors import UserError, unknown_name_error
from metadisco.io import read_yaml
from metadisco.meta.hyper_search import HyperSearch, parse_hyper
from metadisco.objectives import Objective
from metadisco.safe_yaml import check_plain_data, load_value
from metadisco.validate import check_finite_tree, coerce, shorten

_REQUIRED = dataclasses.MISSING


class Settings(Mapping):
    """A frozen, hashable, ordered mapping of typed values (a task's trainer settings, a strategy's own
    settings), with the mapping as it was written kept aside for the resolved config (`written`)."""

    def __init__(self, items: Mapping | typing.Iterable = (), written: Mapping | None = None):
        self._items = tuple(dict(items).items())
        self.written = written

    def __getitem__(self, key: str) -> Any:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other.items())

    def __repr__(self) -> str:
        return f"Settings({dict(self._items)!r})"

    def to_plain(self) -> dict:
        return plain_data(dict(self.written) if self.written is not None else dict(self._items))


def train_settings(value: Any, path: str) -> Settings:
    """A task's `train` section: TrainConfig fields typed by their annotations (an unknown key is an error)."""
    mapping = _mapping(value, path)
    return Settings({str(k): train_setting(str(k), v, f"{path}.{k}") for k, v in mapping.items()}, mapping)


def _strategy_settings(value: Any, path: str) -> Settings:
    """`strategy.settings`: the strategy's own parameters, plain numbers checked finite (`make_strategy` checks
    the names against the strategy)."""
    mapping = _mapping(value, path)
    check_finite_tree(path, mapping)
    return Settings({str(k): v for k, v in mapping.items()}, mapping)


def _scale_ranges(value: Any, path: str) -> Settings:
    """`sampling.scale`: {setting: [lo, hi]} with 0 < lo <= hi, each read by the one coercion engine (the names
    are checked against each task's trainer in `metadisco.meta.checks`)."""
    mapping = _mapping(value, path)
    out = {}
    for name, bounds in mapping.items():
        where = f"config key {path}.{name}"
        pair = coerce(bounds, tuple[float, ...], where)
        if len(pair) != 2:
            raise UserError(f"{where} must be a range [lo, hi] of two factors, e.g. [0.2, 2.0], got "
                            f"{shorten(bounds)}")
        lo, hi = pair
        if not 0 < lo <= hi:
            raise UserError(f"{where} must be finite factors with 0 < lo <= hi, got [{lo}, {hi}]")
        out[str(name)] = (lo, hi)
    return Settings(out, mapping)


def _objective(value: Any, path: str) -> Objective:
    if not isinstance(value, dict):
        raise UserError(f"config key objective must be a mapping of slots, got {type(value).__name__}")
    try:
        return Objective.from_spec(value)
    except UserError as e:
        raise UserError(f"objective: {e}") from None


def _mapping(value: Any, path: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UserError(f"config key {path} must be a mapping, got {shorten(value)}")
    return dict(value)


@dataclass(frozen=True)
class TaskConfig:
    """One training task: every member trains `seeds` agents on `env` for `timesteps` steps each."""

    env: str
    timesteps: int | tuple[int, ...]  # one length, or several: one is drawn per generation (lifetime sampling)
    seeds: int = 1
    preset: str | None = None  # trainer preset; default chosen from the env id
    train: Settings = field(default_factory=Settings)  # TrainConfig settings, typed, e.g. {num_envs: 8}
    baseline: float | None = None  # fitness normaliser (PPO's return); measured and cached when needed

    PARSERS: typing.ClassVar = {"train": train_settings}

    @property
    def lifetimes(self) -> tuple[int, ...]:
        """The training lengths this task can be trained at."""
        return self.timesteps if isinstance(self.timesteps, tuple) else (self.timesteps,)

    @classmethod
    def from_plain(cls, data: Any, key: str) -> TaskConfig:
        return _from_dict(cls, data, key)


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
    settings: Settings = field(default_factory=Settings)

    PARSERS: typing.ClassVar = {"settings": _strategy_settings}

    @classmethod
    def from_plain(cls, data: Any, key: str) -> StrategyConfig:
        return _from_dict(cls, data, key)


@dataclass(frozen=True)
class SamplingConfig:
    """Per-generation task sampling (GROOVE, TA-LPG): each generation trains every member on
    `tasks_per_generation` tasks drawn without replacement (0: all), each at one of its `timesteps`, drawn from
    the key of (seed, generation); all members of a generation, so both halves of every antithetic pair, share
    the draw and the seeds."""

    tasks_per_generation: int = 0
    # {traced setting: (lo, hi)}: each generation, each drawn task trains at its own value of the setting times
    # a factor drawn log-uniformly in [lo, hi] (members and the PPO control alike), so that no single step size,
    # say, is what the objective is fitted to (`metadisco.meta.tasks.draw_settings`).
    scale: Settings = field(default_factory=Settings)

    PARSERS: typing.ClassVar = {"scale": _scale_ranges}

    @classmethod
    def from_plain(cls, data: Any, key: str) -> SamplingConfig:
        return _from_dict(cls, data, key)


@dataclass(frozen=True)
class ValidationConfig:
    """Meta-validation: envs distinct from the tasks and from `held_out_envs`. Every `every` generations (and at
    generation 0 and the last) the ES mean and PPO train on the same fixed seeds of each task (every listed
    length); the mean's PPO-normalised score picks the objective a run keeps (`objective_best.msgpack`)."""

    tasks: tuple[TaskConfig, ...] = ()
    every: int = 5

    @classmethod
    def from_plain(cls, data: Any, key: str) -> ValidationConfig:
        return _from_dict(cls, data, key)


NORMALISERS = ("fixed", "paired")
COMBINES = ("mean", "rank")  # how a generation's tasks combine into what the ES is told (fitness.mean_task_ranks)


@dataclass(frozen=True)
class MetaConfig:
    objective: Objective
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
    combine: str = "mean"  # what the ES is told: mean of the tasks' scores | mean of their ranks (COMBINES)
    validation: ValidationConfig = ValidationConfig()
    plugins: tuple[str, ...] = ()  # plugin modules (metadisco.plugins), loaded before the objective is read
    hyper: HyperSearch = HyperSearch()  # trainer settings the ES evolves with the objective (none by default)
    # The objective section as written (after --set), for the resolved config; None when built in code.
    objective_written: dict | None = field(default=None, compare=False, repr=False)

    PARSERS: typing.ClassVar = {"objective": _objective, "hyper": parse_hyper}

    def validate(self) -> MetaConfig:
        """Check every value once, where the config enters: names, types, finiteness, ranges, and sizes against
        this machine's memory (`metadisco.meta.checks`); a `UserError` names the first bad key."""
        from metadisco.meta.checks import check_meta_config

        check_meta_config(self)
        return self

    def to_dict(self) -> dict:
        plain = {f.name: plain_data(getattr(self, f.name)) for f in fields(self) if f.name != "objective_written"}
        if self.objective_written is not None:
            plain["objective"] = plain_data(self.objective_written)
        # Sections that older configs lacked are left out while they hold their defaults, so the resolved
        # config (and its digest, which --resume checks) of a run made before they existed is unchanged.
        for name in ("sampling", "normalise", "combine", "validation", "plugins", "hyper"):
            if getattr(self, name) == _DEFAULTS[name]:
                del plain[name]
        if "sampling" in plain and not self.sampling.scale:  # likewise a key newer than the section
            del plain["sampling"]["scale"]
        return plain

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None)


_DEFAULTS = {"sampling": SamplingConfig(), "normalise": "fixed", "combine": "mean", "validation": ValidationConfig(),
             "plugins": (), "hyper": HyperSearch()}


def plain_data(value):
    """A config value as plain YAML data (tuples as lists, sections as mappings, an objective as its spec of
    the slots and options that differ from the default objective)."""
    if isinstance(value, (Settings, HyperSearch)):
        return value.to_plain()
    if isinstance(value, Objective):
        return _short_spec(value)
    if dataclasses.is_dataclass(value):
        return {f.name: plain_data(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: plain_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(v) for v in value]
    return value


def _short_spec(objective: Objective) -> dict:
    default = Objective().to_spec()
    out = {}
    for slot, spec in objective.to_spec().items():
        if spec != default.get(slot):  # a trace slot has no default: it is always written
            kind_default = type(getattr(objective, slot))().options() \
                if slot not in default or spec["kind"] != default[slot]["kind"] \
                else {k: v for k, v in default[slot].items() if k != "kind"}
            out[slot] = plain_data({k: v for k, v in spec.items()
                                    if k in ("kind", "plugin") or v != kind_default.get(k)})
    return out


# ---------------------------------------------------------------------------------------------------------
# reading: plain data -> dataclasses, with the key path in every error


def _from_dict(cls, data: Any, key: str):
    path = key.removeprefix("config key ")
    prefix = f"{path}." if path else ""
    if not isinstance(data, dict):
        raise UserError(f"config key {path or '(top level)'} must be a mapping, got {shorten(data)}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in fields(cls) if f.init and f.name != "objective_written"}
    for name in data:
        if name not in known:
            raise unknown_name_error(f"config key under {path}" if path else "config key", str(name), list(known))
    parsers = getattr(cls, "PARSERS", {})
    values = {}
    for name, f in known.items():
        if name not in data:
            if f.default is _REQUIRED and f.default_factory is _REQUIRED:
                raise UserError(f"config is missing the key {prefix}{name}")
            continue
        if name in parsers:
            values[name] = parsers[name](data[name], f"{prefix}{name}")
        else:
            values[name] = coerce(data[name], hints[name], f"config key {prefix}{name}")
    if cls is MetaConfig and "objective" in data:
        values["objective_written"] = data["objective"]
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


def with_overrides(data: Any, overrides, what: str) -> dict:
    """A copy of the plain config data `data` (parsed YAML) with 'key=value' overrides set at their dotted
    paths; `what` names the config kind in the error for data that is not a mapping."""
    import copy

    check_plain_data(data, "the config")  # before the deep copy: aliases of aliases expand there
    data = copy.deepcopy(data) if data is not None else {}
    if not isinstance(data, dict):
        raise UserError(f"a {what} config must be a YAML mapping at the top level")
    for item in overrides:
        key, text = split_assignment(item)
        value = load_value(text, f"--set {key}") if text else None
        _set_path(data, key, value)
    check_plain_data(data, "the config with its --set values")
    return data


def from_plain(cls, data: dict, key: str = ""):
    """A config dataclass (fields typed by annotations, sections by `cls.PARSERS`) from plain data; an unknown,
    missing or mistyped key is a `UserError` naming its path (`key`: the section's, for a nested one)."""
    return _from_dict(cls, data, key)


def parse_config(data: Any, overrides: list[str] | tuple[str, ...] = (), base_dir: str | Path | None = None
                 ) -> MetaConfig:
    """Build a validated `MetaConfig` from plain data (parsed YAML) and 'key=value' overrides. `base_dir`, the
    config file's directory, is where its `plugins:` are looked for after the Python path and the working
    directory."""
    data = with_overrides(data, overrides, "meta-training")
    if "plugins" in data:  # before the objective is read: plugins define its kinds
        from metadisco.plugins import load_plugins

        load_plugins(coerce(data["plugins"], tuple[str, ...], "config key plugins"), (base_dir,))
    return _from_dict(MetaConfig, data, "").validate()


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> MetaConfig:
    """Read a YAML config file; a missing or unparsable file is a `UserError`."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"no config file {str(path)!r}")
    return parse_config(read_yaml(path), overrides, path.parent)
