"""The meta-training config: a YAML file read into frozen dataclasses, with `--set key=value` overrides.

    plugins:        [my_module, ...]                modules that register their own pieces / envs
                                                    (metadisco.core.plugins)
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
    fitness:        final_return | mean_return | eval_return (deterministic episodes of the trained agent's
                    mode, DiscoBench's score; each task plays train.eval_episodes of them, 16 unless set), or
                    {score: <one of those>, tune: {lr: [1e-3, 2.5e-3, 5e-3, 1e-2]}}: each member (and PPO's
                    control) trains at every point of the grid (the product of the lists of traced settings)
                    and scores at its own best point, as the judge scores it (`metadisco.meta.tuning`)
    generations, seed, eval_every, checkpoint_every, baseline_seeds, start, start_scale
    held_out_envs:  [ids]   envs meta-training never touches (read by evaluation); `ID@TIMESTEPS` gives an env
                            its own evaluation budget

Overrides address any key with dots, list entries by index: `strategy.sigma_init=0.05`,
`tasks.0.timesteps=65536`, `tasks.0.train.num_envs=8`. The value is parsed as YAML (`0.05`, `true`, `[a, b]`).
Unknown and missing keys are `UserError`s naming the key and the known ones.

Every section is read once into frozen, typed values: `objective` into an `Objective`, each task's `train` into
a `Settings` of values typed by `TrainConfig`'s fields, `strategy.settings` into a `Settings`, all by the one
coercion engine (`metadisco.core.coerce.coerce`). `to_dict()` writes each section back as it was written (after
`--set`), so the resolved config.yaml, and the digest that `--resume` checks, are those of earlier versions.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field, fields
from typing import Any

import yaml

from metadisco.core.coerce import check_finite_tree, coerce
from metadisco.core.errors import UserError, shorten
from metadisco.core.schema import Section, Settings, mapping_section, plain_data
from metadisco.meta.hyper_search import HyperSearch, parse_hyper
from metadisco.objectives import Objective
from metadisco.runs.migrate import CONFIG_SCHEMA
from metadisco.trainers.config import train_settings
from metadisco.trainers.hyper import check_grid

_REQUIRED = dataclasses.MISSING


def _strategy_settings(value: Any, path: str) -> Settings:
    """`strategy.settings`: the strategy's own parameters, plain numbers checked finite (`make_strategy` checks
    the names against the strategy)."""
    mapping = mapping_section(value, path)
    check_finite_tree(path, mapping)
    return Settings({str(k): v for k, v in mapping.items()}, mapping)


def _scale_ranges(value: Any, path: str) -> Settings:
    """`sampling.scale`: {setting: [lo, hi]} with 0 < lo <= hi, each read by the one coercion engine (the names
    are checked against each task's trainer in `metadisco.meta.checks`)."""
    mapping = mapping_section(value, path)
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


def _tune_grid(value: Any, path: str) -> Settings:
    """`fitness.tune`: {setting: [values...]}, each list non-empty, finite, distinct (the names and values are
    checked against each task's trainer in `metadisco.meta.checks`)."""
    mapping = mapping_section(value, path)
    if not mapping:
        raise UserError(f"config key {path} is empty; give {{setting: [values...]}}, e.g. {{lr: [1e-3, 5e-3]}}, "
                        "or leave tune out")
    out = {str(name): coerce(values, tuple[float, ...], f"config key {path}.{name}")
           for name, values in mapping.items()}
    check_grid(list(out.items()), f"config key {path}", "[V1, V2, ...]")
    return Settings(out, mapping)


@dataclass(frozen=True)
class FitnessConfig(Section):
    """What a member is scored by: `score` (final_return | mean_return | eval_return) and, with `tune`, at its
    best point of that grid of traced settings ({setting: values}, the grid their product)."""

    score: str = "final_return"
    tune: Settings = field(default_factory=Settings)

    PARSERS: typing.ClassVar = {"tune": _tune_grid}

    def to_plain(self):
        """The score's name alone when untuned (as configs without tuning write it, so their digests stay)."""
        if not self.tune:
            return self.score
        return {"score": self.score, "tune": self.tune.to_plain()}


def _fitness(value: Any, path: str) -> FitnessConfig:
    """`fitness`: a score's name, or {score, tune}."""
    if isinstance(value, str):
        return FitnessConfig(score=value)
    if not isinstance(value, dict):
        raise UserError(f"config key {path} must be a score's name (e.g. final_return) or a mapping "
                        f"{{score: ..., tune: {{lr: [...]}}}}, got {shorten(value)}")
    return FitnessConfig.from_plain(value, path)


def _objective(value: Any, path: str) -> Objective:
    if not isinstance(value, dict):
        raise UserError(f"config key objective must be a mapping of slots, got {type(value).__name__}")
    try:
        return Objective.from_spec(value)
    except UserError as e:
        raise UserError(f"objective: {e}") from None


@dataclass(frozen=True)
class TaskConfig(Section):
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


@dataclass(frozen=True)
class StrategyConfig(Section):
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


@dataclass(frozen=True)
class SamplingConfig(Section):
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


@dataclass(frozen=True)
class ValidationConfig(Section):
    """Meta-validation: envs distinct from the tasks and from `held_out_envs`. Every `every` generations (and at
    generation 0 and the last) the ES mean and PPO train on the same fixed seeds of each task (every listed
    length); the mean's PPO-normalised score picks the objective a run keeps (`objective_best.msgpack`)."""

    tasks: tuple[TaskConfig, ...] = ()
    every: int = 5


NORMALISERS = ("fixed", "paired")
COMBINES = ("mean", "rank")  # how a generation's tasks combine into what the ES is told (fitness.mean_task_ranks)


@dataclass(frozen=True)
class MetaConfig:
    objective: Objective
    tasks: tuple[TaskConfig, ...]
    strategy: StrategyConfig
    generations: int
    held_out_envs: tuple[str, ...]
    fitness: FitnessConfig = FitnessConfig()  # the score, and the grid it is tuned over (none by default)
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
    plugins: tuple[str, ...] = ()  # plugin modules (metadisco.core.plugins), loaded before the objective is read
    hyper: HyperSearch = HyperSearch()  # trainer settings the ES evolves with the objective (none by default)
    # The objective section as written (after --set), for the resolved config; None when built in code.
    objective_written: dict | None = field(default=None, compare=False, repr=False)

    PARSERS: typing.ClassVar = {"objective": _objective, "hyper": parse_hyper, "fitness": _fitness}
    KEEP_WRITTEN: typing.ClassVar = {"objective": "objective_written"}  # see `metadisco.core.schema.from_plain`

    def to_dict(self) -> dict:
        """The whole config as plain data, every section (the objective as written, where it was read from one)."""
        plain = {f.name: plain_data(getattr(self, f.name)) for f in fields(self) if f.name != "objective_written"}
        if self.objective_written is not None:
            plain["objective"] = plain_data(self.objective_written)
        return plain

    def to_yaml(self) -> str:
        """The resolved config a run directory holds (config.yaml): its schema version, then `to_dict()`; older
        versions' files are read through `metadisco.runs.migrate`."""
        return yaml.safe_dump({"schema": CONFIG_SCHEMA, **self.to_dict()}, sort_keys=False, default_flow_style=None)
