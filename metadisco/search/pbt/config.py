"""The PBT config (`metadisco pbt CONFIG.yaml`):

    env: CartPole-v1
    objective: ppo               # built-in name, objective file or meta-training run directory
    population: 8                # agents trained at once (sharded over the devices, vmapped on each)
    timesteps: 262144            # env steps per agent, over the whole run
    seed: 0
    train: {num_envs: 4}         # fixed settings (TrainConfig fields); preset: as `metadisco train`
    space: {lr: {low: 1.0e-5, high: 1.0e-1}}      # searched settings (`metadisco.trainers.hyper_space`)
    ready: {kind: every, updates: 16}              # strategies by name (`metadisco.search.pbt.strategies`)
    exploit: {kind: truncation, fraction: 0.25}
    explore: {kind: perturb, factors: [0.8, 1.2], resample_probability: 0.25}

Agents start from settings drawn uniformly (in units) from the space, the same draw for every exploit / explore
choice, so `exploit: {kind: none}` is a random search over the same space at the same env steps.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field

import numpy as np

from metadisco.core.coerce import check_float, check_int
from metadisco.core.errors import UserError, unknown_name_error
from metadisco.core.schema import Section, Settings
from metadisco.runs.seeds import resolve_config
from metadisco.search.pbt.strategies import EXPLOIT, EXPLORE, READY
from metadisco.trainers.config import TrainConfig, train_settings
from metadisco.trainers.hyper_space import Dimension, parse_space, space_section


@dataclass(frozen=True)
class ReadyConfig(Section):
    kind: str = "every"
    updates: int = 10


@dataclass(frozen=True)
class ExploitConfig(Section):
    kind: str = "truncation"
    fraction: float = 0.25


@dataclass(frozen=True)
class ExploreConfig(Section):
    kind: str = "perturb"
    factors: tuple[float, ...] = (0.8, 1.2)
    resample_probability: float = 0.25


@dataclass(frozen=True)
class PBTConfig:
    env: str
    space: dict
    population: int = 8
    timesteps: int | None = None
    objective: str = "ppo"
    seed: int = 0
    preset: str | None = None
    train: Settings = field(default_factory=Settings)
    ready: ReadyConfig = ReadyConfig()
    exploit: ExploitConfig = ExploitConfig()
    explore: ExploreConfig = ExploreConfig()

    PARSERS: typing.ClassVar = {"train": train_settings, "space": space_section}

    def resolve(self) -> tuple[TrainConfig, tuple[Dimension, ...], int]:
        """(trainer config, space, rounds), every value checked; a `UserError` names the first bad one."""
        check_int("population", self.population, 1, 1 << 16)
        check_int("seed", self.seed, 0, 2**32 - 1)
        for name, kind, known in (("ready", self.ready.kind, READY), ("exploit", self.exploit.kind, EXPLOIT),
                                  ("explore", self.explore.kind, EXPLORE)):
            if kind not in known:
                raise unknown_name_error(f"{name} strategy", kind, list(known))
        check_int("ready.updates", self.ready.updates, 1)
        check_float("exploit.fraction", self.exploit.fraction, 0.0, 0.5, lo_open=True)
        check_float("explore.resample_probability", self.explore.resample_probability, 0.0, 1.0)
        if not self.explore.factors:
            raise UserError("explore.factors is empty; give factors such as [0.8, 1.2]")
        for i, f in enumerate(self.explore.factors):
            check_float(f"explore.factors.{i}", f, 0.0, lo_open=True)
        try:
            config = resolve_config(self.env, self.preset, self.train, self.timesteps)
        except UserError as e:
            raise UserError(f"train: {e}") from None
        if config.num_updates % self.ready.updates:
            raise UserError(f"ready.updates {self.ready.updates} must divide the {config.num_updates} updates of "
                            f"{config.batch_size} steps that timesteps {config.total_timesteps} gives; e.g. "
                            f"ready.updates {_divisor_near(config.num_updates, self.ready.updates)}")
        return config, parse_space(self.space, config), config.num_updates // self.ready.updates


def _divisor_near(n: int, k: int) -> int:
    divisors = np.array([d for d in range(1, n + 1) if n % d == 0])
    return int(divisors[np.argmin(np.abs(divisors - k))])
