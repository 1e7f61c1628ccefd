"""Train several seeds of one objective on one env: the library call behind `metadisco train`.

Seeds are vmapped in one compiled call. The keys depend only on (`seed`, number of seeds), so two objectives
trained with the same arguments see identical keys (`seed_keys`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from metadisco.config import TrainConfig, apply_overrides, default_preset_name, get_preset
from metadisco.envs import check_env_id, make_env
from metadisco.fitness import final_return
from metadisco.objectives import Objective
from metadisco.train import Metrics, make_train


def seed_keys(num_seeds: int, seed: int = 0) -> jax.Array:
    """[num_seeds] PRNG keys for training runs; the same for every method given the same arguments."""
    return jax.random.split(jax.random.PRNGKey(seed), num_seeds)


def resolve_config(env_id: str, preset: str | None = None, overrides=(), timesteps: int | None = None
                   ) -> TrainConfig:
    """The preset (named, or chosen from the env id), with `timesteps` and `key=value` overrides, validated."""
    check_env_id(env_id)
    config = get_preset(preset or default_preset_name(env_id))
    if timesteps is not None:
        overrides = [f"total_timesteps={timesteps}", *overrides]
    return apply_overrides(config, list(overrides)).validate()


@dataclass
class SeedsResult:
    metrics: Metrics  # numpy leaves, [num_seeds, num_updates]
    final_return: np.ndarray  # [num_seeds], NaN where a seed diverged
    compile_seconds: float
    train_seconds: float
    env_steps: int  # over all seeds

    @property
    def steps_per_second(self) -> float:
        return self.env_steps / self.train_seconds


def train_seeds(env_id: str, objective: Objective, meta_params: Any, config: TrainConfig, num_seeds: int,
                seed: int = 0) -> SeedsResult:
    """Train `num_seeds` agents at once (vmapped) and reduce each to its final return."""
    env = make_env(env_id)
    train = make_train(config, env, objective)
    keys = seed_keys(num_seeds, seed)
    fn = jax.jit(jax.vmap(lambda k, m: train(k, m).metrics, in_axes=(0, None)))
    start = time.perf_counter()
    compiled = fn.lower(keys, meta_params).compile()
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    metrics = jax.block_until_ready(compiled(keys, meta_params))
    train_seconds = time.perf_counter() - start
    metrics = jax.tree.map(np.asarray, metrics)
    returns = np.asarray(final_return(metrics, config.final_window))
    env_steps = num_seeds * config.num_updates * config.batch_size
    return SeedsResult(metrics, returns, compile_seconds, train_seconds, env_steps)
