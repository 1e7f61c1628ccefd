"""Train every method on one env with the same seed keys, batching methods that share a compiled trainer.

Methods whose `Objective` (the static structure: which drift, value loss and optimiser, and their sizes) is the
same, and whose meta-parameters have the same shapes, run in ONE compiled call: its M methods x S seeds are
M * S independent runs (run m * S + s trains method m with seed key s), sharded over the devices and vmapped
on each (`metadisco.parallel.sharding`; padded when M * S does not divide by the device count). Methods with different
structures (e.g. `ppo` and `dpo`, whose drifts are different functions) cannot share a compiled function, so
each such group is its own call. Every call gets the same [num_seeds] keys from `seed_keys(num_seeds, seed)`:
seed i of every method starts from the same network initialisation and sees the same environment randomness.

With a config whose `eval_episodes` > 0 each trained agent also plays that many deterministic episodes (its mode,
`metadisco.trainers.greedy`) inside the same compiled call; their mean is the run's `eval_return`.
A `MethodRun` goes to and from a cell record (`run_record`, `run_from_record`) bit for bit, so an evaluation's
summary can be computed from its cells alone (`metadisco.core.cells`).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.core.cells import pack_array, unpack_array
from metadisco.envs import devices_for_env, make_env
from metadisco.evaluate.methods import Method
from metadisco.parallel import sharding
from metadisco.runs.seeds import seed_keys
from metadisco.trainers import make_trainer
from metadisco.trainers.base import EpisodeCurves
from metadisco.trainers.config import TrainConfig
from metadisco.trainers.hyper import hyper_of, static_of
from metadisco.trainers.metrics import diverged, reduce_fitness


@dataclass
class MethodRun:
    """One method's seeds on one env. Arrays are numpy."""

    curves: EpisodeCurves
    final_return: np.ndarray  # [num_seeds], NaN where diverged or no episode finished
    mean_return: np.ndarray  # [num_seeds] area under the learning curve: mean return of every episode, NaN likewise
    diverged: np.ndarray  # [num_seeds] bool: losses went non-finite
    key_data: np.ndarray  # [num_seeds, ...] uint32: the raw PRNG keys this method was trained with
    group: int  # index of the compiled call it ran in
    seconds: float  # wall time of that call, compilation included
    # [num_seeds] mean return of the deterministic evaluation episodes (the agent's mode), NaN where diverged;
    # None when none were played
    eval_return: np.ndarray | None = None


def run_record(run: MethodRun) -> dict:
    """A cell's record of `run` (JSON-able, exact)."""
    return {"episode_return": pack_array(run.curves.episode_return),
            "episode_count": pack_array(run.curves.episode_count),
            "final_return": pack_array(run.final_return), "mean_return": pack_array(run.mean_return),
            "diverged": pack_array(run.diverged), "key_data": pack_array(run.key_data), "group": run.group,
            "seconds": run.seconds,
            "eval_return": None if run.eval_return is None else pack_array(run.eval_return)}


def run_from_record(record: dict) -> MethodRun:
    """The inverse of `run_record`."""
    return MethodRun(EpisodeCurves(unpack_array(record["episode_return"]), unpack_array(record["episode_count"])),
                     unpack_array(record["final_return"]), unpack_array(record["mean_return"]),
                     unpack_array(record["diverged"]), unpack_array(record["key_data"]), int(record["group"]),
                     float(record["seconds"]),
                     None if record.get("eval_return") is None else unpack_array(record["eval_return"]))


def group_methods(methods: list[Method]) -> list[list[Method]]:
    """Methods that can share one compiled trainer: same Objective and same meta-parameter shapes."""
    groups: dict[tuple, list[Method]] = {}
    for m in methods:
        leaves, treedef = jax.tree.flatten(m.meta)
        signature = (m.objective, treedef, tuple((np.shape(x), np.asarray(x).dtype.str) for x in leaves))
        groups.setdefault(signature, []).append(m)
    return list(groups.values())


@functools.lru_cache(maxsize=16)
def _compiled(static: TrainConfig, env, objective, devices: tuple):
    """The trainer's metrics over a leading run axis of (keys, meta-parameters), split over `devices`, with
    hyperparameters shared by the runs; `static` is a static config (`metadisco.trainers.hyper.static_of`)."""
    train = make_trainer(static, env, objective).train
    return sharding.shard_runs(lambda key, meta, hyper: train(key, meta, hyper).metrics, devices, (0, 0, None))


def _by_method(tree, num_methods: int, num_seeds: int):
    """[M * S, ...] leaves (run m * S + s) -> [M, S, ...]."""
    return jax.tree.map(lambda x: x.reshape(num_methods, num_seeds, *x.shape[1:]), tree)


def group_program(env, group: list[Method], config: TrainConfig, keys, devices) -> tuple:
    """(compiled function, its placed arguments) of one group of methods (`group_methods`) on `env` with seed
    `keys`: run m * S + s trains method m with seed s, split over (at most one run per) `devices`."""
    num_seeds = len(keys)
    used = tuple(sharding.devices_for(len(group) * num_seeds, devices))
    # Run m * S + s: method m, seed s. Methods are repeated S times, keys tiled M times.
    run_meta = jax.tree.map(lambda *xs: np.repeat(np.stack([np.asarray(x) for x in xs]), num_seeds, axis=0),
                            *(m.meta for m in group))
    run_keys = np.tile(np.asarray(keys), (len(group),) + (1,) * (np.ndim(keys) - 1))
    fn = _compiled(static_of(config), env, group[0].objective, used)
    return fn, sharding.place((run_keys, run_meta, hyper_of(config)), used, (0, 0, None))


def key_data_of(keys) -> np.ndarray:
    """The raw uint32 data of PRNG keys (typed or raw)."""
    return np.asarray(jax.random.key_data(keys)) if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key) \
        else np.asarray(keys)


def train_group(env_id: str, group: list[Method], config: TrainConfig, keys, devices, index: int = 0
                ) -> dict[str, MethodRun]:
    """One compiled call: every method of `group` (`group_methods`) with every seed key of `keys` on `env_id`;
    {label: MethodRun}. `index` is recorded as the call's number."""
    env = make_env(env_id)
    devices = tuple(devices_for_env(env_id, devices))
    num_seeds = len(keys)
    count = len(group) * num_seeds
    start = time.perf_counter()
    fn, args = group_program(env, group, config, keys, devices)
    out = jax.block_until_ready(fn(*args))
    seconds = time.perf_counter() - start
    metrics = _by_method(sharding.gather(out, count), len(group), num_seeds)
    played = None if metrics.eval_return is None else np.asarray(reduce_fitness("eval_return", metrics, 0.0))
    returns = np.asarray(reduce_fitness("final_return", metrics, config.final_window))
    areas = np.asarray(reduce_fitness("mean_return", metrics, config.final_window))
    failed = np.asarray(diverged(metrics))
    curves = EpisodeCurves(np.asarray(metrics.episode_return), np.asarray(metrics.episode_count))
    key_data = key_data_of(keys)
    return {m.label: MethodRun(EpisodeCurves(curves.episode_return[i], curves.episode_count[i]), returns[i],
                               areas[i], failed[i], key_data, index, seconds,
                               None if played is None else played[i])
            for i, m in enumerate(group)}


def train_env(env_id: str, methods: list[Method], config: TrainConfig, num_seeds: int, seed: int = 0,
              progress=None, devices=None) -> dict[str, MethodRun]:
    """Train `num_seeds` seeds of every method on `env_id`; {label: MethodRun} in the order of `methods`.

    The runs are sharded over `devices` (default: every device of this process). `progress`, if given, is a
    tqdm bar advanced by one per compiled call.
    """
    devices = tuple(jax.local_devices() if devices is None else devices)
    keys = seed_keys(num_seeds, seed)
    runs: dict[str, MethodRun] = {}
    for index, group in enumerate(group_methods(methods)):
        if progress is not None:
            progress.set_postfix_str(f"{env_id}: {', '.join(m.label for m in group)}")
        runs.update(train_group(env_id, group, config, keys, devices, index))
        if progress is not None:
            progress.update(1)
    return {m.label: runs[m.label] for m in methods}
