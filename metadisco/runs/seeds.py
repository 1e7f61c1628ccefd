"""Train several seeds of one objective on one env: the library call behind `metadisco train`.

Seeds are sharded over the devices (every core, with `metadisco.parallel.devices`) and vmapped on each, in one compiled
call (`metadisco.parallel.sharding`). The keys depend only on (`seed`, number of seeds), so two objectives trained with
the same arguments see identical keys (`seed_keys`). For a given device count the results are bit-identical
from run to run; on another device count they agree statistically, not bitwise.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np

from metadisco.envs import check_env_id, devices_for_env, make_env
from metadisco.objectives import Objective
from metadisco.parallel import compile_cache, sharding
from metadisco.trainers import make_trainer
from metadisco.trainers.base import Metrics
from metadisco.trainers.config import TrainConfig, apply_overrides, default_preset_name, get_preset, parse_overrides
from metadisco.trainers.hyper import hyper_of, static_of
from metadisco.trainers.metrics import reduce_fitness


def seed_keys(num_seeds: int, seed: int = 0) -> jax.Array:
    """[num_seeds] PRNG keys for training runs; the same for every method given the same arguments."""
    return jax.random.split(jax.random.PRNGKey(seed), num_seeds)


def resolve_config(env_id: str, preset: str | None = None, overrides=(), timesteps: int | None = None,
                   algorithm: str | None = None) -> TrainConfig:
    """The preset (named, or chosen from the env id and the algorithm), with `timesteps` and overrides ('key=value'
    strings or a mapping of typed values, `metadisco.trainers.config.apply_overrides`), validated.

    The algorithm is the overrides' `algorithm`, else `algorithm` (the objective's, `Objective.algorithm`), else
    ppo; with no preset named, the env family's preset for that algorithm is the base, so `algorithm=pqn` gives
    PQN's published settings, not PPO's numbers under PQN."""
    check_env_id(env_id)
    changes = parse_overrides(overrides) if not isinstance(overrides, Mapping) else dict(overrides)
    algorithm = changes.get("algorithm", algorithm or "ppo")
    config = get_preset(preset or default_preset_name(env_id, algorithm))
    if timesteps is not None:
        config = replace(config, total_timesteps=timesteps)
    return apply_overrides(config, changes).validate()


@dataclass
class SeedsResult:
    metrics: Metrics  # numpy leaves, [num_seeds, num_updates]
    final_return: np.ndarray  # [num_seeds], NaN where a seed diverged
    compile_seconds: float  # XLA compilation (near zero when the persistent cache has the program)
    train_seconds: float
    env_steps: int  # over all seeds
    trace_seconds: float = 0.0  # tracing and lowering to XLA, before compilation
    devices: int = 1  # devices the seeds were sharded over
    compile_cached: bool = False  # the program came from the persistent compilation cache

    @property
    def steps_per_second(self) -> float:
        return self.env_steps / self.train_seconds

    @property
    def return_curve(self) -> np.ndarray:
        """[num_updates]: per update, the mean over seeds of the seeds' mean return of the episodes they finished
        in it (seeds that finished none are left out); NaN where no seed finished one."""
        return mean_finished_return(self.metrics.episode_return, self.metrics.episode_count)


def mean_finished_return(returns, counts) -> np.ndarray:
    """[seeds, updates] -> [updates]: the mean over the seeds with `counts > 0` of `returns`, NaN where none has.
    (`np.nanmean` gives the same numbers but warns on every all-NaN column.)"""
    returns = np.asarray(returns)
    finished = np.asarray(counts) > 0
    n = finished.sum(axis=0)
    total = np.where(finished, returns, 0).sum(axis=0)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan).astype(total.dtype)  # float32 in, float32 out


# A key per seed; the meta-parameters and hyperparameters shared, as vmap(in_axes=(0, None, None)) on one device.
IN_AXES = (0, None, None)


@functools.lru_cache(maxsize=16)
def runs_program(static: TrainConfig, env_id: str, objective: Objective, devices: tuple, in_axes=IN_AXES):
    """The metrics of runs `(key, meta, hyper)` over a leading run axis split over `devices`, with `in_axes`
    saying which arguments are per run (0) or shared (None); one program per static config (`static_of`),
    whatever the hyperparameters: a sweep passes a hyper per run, (0, None, 0)."""
    train = make_trainer(static, make_env(env_id), objective).train
    return sharding.shard_runs(lambda k, m, h: train(k, m, h).metrics, devices, in_axes)


def seeds_program(env_id: str, objective: Objective, meta_params: Any, config: TrainConfig, num_seeds: int,
                  seed: int = 0, devices=None):
    """(jitted function, its arguments, devices used) of `train_seeds`: the metrics of `num_seeds` runs, split
    over `devices` (default: every device of this process; at most one per seed) and padded to a multiple of
    their count, each device vmapping its share. `fn(*args)` gives [padded seeds, num_updates] leaves. Configs
    that differ only in traced settings (`--set lr=...`) get the same function: its hyperparameters are an
    argument."""
    devices = devices_for_env(env_id, jax.local_devices() if devices is None else devices)
    devices = sharding.devices_for(num_seeds, devices)
    keys = np.asarray(seed_keys(num_seeds, seed))
    args = sharding.place((keys, meta_params, hyper_of(config)), devices, IN_AXES)
    return runs_program(static_of(config.validate()), env_id, objective, tuple(devices)), args, devices


def train_seeds(env_id: str, objective: Objective, meta_params: Any, config: TrainConfig, num_seeds: int,
                seed: int = 0, devices=None) -> SeedsResult:
    """Train `num_seeds` agents at once and reduce each to its final return.

    The seeds are split over `devices` (default: every device of this process), padded to a multiple of their
    count; each device vmaps its share (`seeds_program`).
    """
    fn, args, devices = seeds_program(env_id, objective, meta_params, config, num_seeds, seed, devices)
    start = time.perf_counter()
    lowered = fn.lower(*args)
    trace_seconds = time.perf_counter() - start
    hits = compile_cache.hits()
    start = time.perf_counter()
    compiled = lowered.compile()
    compile_seconds = time.perf_counter() - start
    cached = compile_cache.hits() > hits
    start = time.perf_counter()
    metrics = jax.block_until_ready(compiled(*args))
    train_seconds = time.perf_counter() - start
    metrics = sharding.gather(metrics, num_seeds)
    returns = np.asarray(reduce_fitness("final_return", metrics, config.final_window))
    env_steps = num_seeds * config.num_updates * config.batch_size
    return SeedsResult(metrics, returns, compile_seconds, train_seconds, env_steps, trace_seconds, len(devices),
                       cached)
