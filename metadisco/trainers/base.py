"""What every inner trainer shares (PPO's, PQN's, DQN's and the update-rule trainer's): the per-update `Metrics`,
the `TrainResult`, the steppable `Trainer` and its `TrainState`, and the one assembly around each algorithm's update
(`assemble_trainer`: traced settings, vectorised envs, the optimiser and its learning-rate schedule, the state before
the first update and what an algorithm carries beside it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from metadisco.envs import make_vec_env
from metadisco.objectives import Objective, Progress
from metadisco.objectives.registry import OptimizerInputs
from metadisco.trainers.config import TrainConfig
from metadisco.trainers.hyper import hyper_class
from metadisco.trainers.traced import Hyper


class Metrics(NamedTuple):
    """Per-update training metrics, each [num_updates] (plus any vmapped leading axes): the episode fields every
    algorithm has, then each algorithm's own numbers under the names it gives them.

    episode_return: mean undiscounted return of the episodes that finished during the update (NaN if none).
    episode_count:  how many episodes finished during the update.
    losses:         {name: [num_updates]} the algorithm's losses (PPO: actor_loss, value_loss, entropy; DQN:
                    td_loss): a non-finite value in any of them marks the run as diverged (`trainers.metrics`).
    diagnostics:    {name: [num_updates]} its other numbers (PPO: approx_kl, drift_active; DQN: epsilon's
                    entropy), reported and never judged.
    achievements:   [num_updates, num_achievements] fraction of those episodes that unlocked each achievement,
                    for envs that report them (Craftax); None otherwise (`metadisco.trainers.episodes`).
    eval_return:    [num_updates] deterministic episodes' mean return, at the last update (see the field).
    """

    episode_return: jax.Array
    episode_count: jax.Array
    truncation_count: jax.Array  # how many episodes were cut by a time limit (bootstrapped, not terminal)
    losses: dict[str, jax.Array]
    diagnostics: dict[str, jax.Array]
    achievements: jax.Array | None = None
    # [num_updates] the mean return of the deterministic evaluation episodes played after training
    # (`TrainConfig.eval_episodes`, `metadisco.trainers.greedy`), at the last update; NaN before it. None when
    # none are played (and in the metrics of `Trainer.step`, which never plays them).
    eval_return: jax.Array | None = None


class EpisodeCurves(NamedTuple):
    """What evaluations and sweeps keep of runs' `Metrics`: the learning curves, [..., num_updates] each."""

    episode_return: Any  # mean return of the episodes that finished in the update (NaN if none)
    episode_count: Any  # how many finished


class TrainResult(NamedTuple):
    metrics: Metrics
    params: Any  # final agent parameters (dropped by XLA when a caller does not return them)


class TrainState(NamedTuple):
    """One agent between updates: all `step` needs, so an agent can be paused, copied and resumed."""

    params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array
    key: jax.Array
    update: jax.Array  # int32: updates done
    meta: Any  # the objective's meta-parameters
    hyper: Hyper  # the traced settings (float32 leaves)
    extra: Any = None  # what an algorithm carries beside these (DQN: its replay buffer and target parameters)


class Trainer(NamedTuple):
    """The steppable trainer of one agent; jit / vmap each function as needed.

    init(key, meta, hyper=None) -> TrainState                 hyper None: the config's own values
    step(state, k) -> (TrainState, Metrics of [k] updates)    k is static (a scan length)
    train(key, meta, hyper=None) -> TrainResult               = step(init(key, meta, hyper), num_updates)
    """

    init: Callable[..., TrainState]
    step: Callable[[TrainState, int], tuple[TrainState, Metrics]]
    train: Callable[..., TrainResult]
    num_updates: int


# Rollout steps per loop iteration where `TrainConfig.rollout_unroll` is 0, by platform. On a GPU every loop
# iteration costs a round of kernel launches and a wait for the loop's condition; CartPole PPO on one H200 ran
# 1.69x (1 seed) and 1.73x (16 seeds) faster at 8 steps per iteration than at 1, and 1.39x / 1.53x at 4
# (results/bench/gpu/three_peers/levers.json). On the 2-core CPU 4 ran at 0.96x (results/bench/levers_cpu.json).
ROLLOUT_UNROLL_BY_PLATFORM = {"gpu": 8}


def rollout_unroll(config: TrainConfig) -> int:
    """The rollout scan's steps per loop iteration: the config's, or its platform's when it is 0
    (`ROLLOUT_UNROLL_BY_PLATFORM`, else 1), for the platform programs are built for (JAX's default backend)."""
    return config.rollout_unroll or ROLLOUT_UNROLL_BY_PLATFORM.get(jax.default_backend(), 1)


def resolve_hyper(hyper, defaults: Hyper | None, hyper_class: type = Hyper) -> Hyper:
    """`hyper` as a `hyper_class` (the algorithm's `Algorithm.hyper`) of float32 arrays, or the config's own values
    (`defaults`) when it is None."""
    if hyper is None:
        if defaults is None:
            raise ValueError("this trainer was built from a static config: pass hyper")
        return defaults
    return hyper_class(*(jnp.asarray(h, jnp.float32) for h in hyper))


def trainer_envs(env, config: TrainConfig, hyper: Hyper):
    """The vectorised, wrapped envs of a trainer (`assemble_trainer`'s, for every algorithm). Rebuilt per trace
    (cheap Python objects): the reward normaliser discounts with the traced gamma."""
    return make_vec_env(env, config.num_envs, normalize_obs=config.normalize_obs,
                        normalize_reward=config.normalize_reward, gamma=hyper.gamma)


def trainer_optimizer(objective: Objective, config: TrainConfig, meta, hyper: Hyper):
    """The objective's optimiser for a trainer (`assemble_trainer`'s, for every algorithm): the traced lr,
    linearly annealed per update when `config.anneal_lr`, and the traced gradient clip; for an algorithm whose
    objectives name no optimiser (`Algorithm.optimizer`: the update rule's), its own with the same schedule. The
    schedule counts optimiser steps (`Algorithm.optimizer_steps` of them an update), so an update that takes none
    (a replay still filling) does not move it."""
    from metadisco.trainers.algorithm import get_algorithm

    algorithm = get_algorithm(config.algorithm)
    steps_per_update = algorithm.optimizer_steps(config)
    num_updates = config.num_updates

    def learning_rate(count):
        if not config.anneal_lr:
            return hyper.lr
        return hyper.lr * (1.0 - (count // steps_per_update) / num_updates)

    # An algorithm without a gradient clip among its traced settings steps an optimiser of its own that reads none.
    clip = getattr(hyper, "max_grad_norm", None)
    inputs = OptimizerInputs(learning_rate, clip, num_updates * steps_per_update)
    if algorithm.optimizer is not None:
        return algorithm.optimizer(config, inputs)
    return objective.optimizer(meta["optimizer"], inputs, Progress(jnp.float32(0.0), jnp.float32(num_updates)))


# make_update(meta, hyper, envs, optimizer) -> update(state, _) -> (state, Metrics): one algorithm's update.
MakeUpdate = Callable[[Any, Hyper, Any, Any], Callable[[TrainState, None], tuple[TrainState, Metrics]]]


def assemble_trainer(config: TrainConfig, defaults: Hyper | None, env, objective: Objective, network,
                     make_update: MakeUpdate, init_extra: Callable[[Any, jax.Array], Any] | None = None) -> Trainer:
    """The `Trainer` every algorithm shares around its own update: `init` resets the envs and
    initialises `network` and the optimiser, `step` scans `make_update(meta, hyper, envs, optimizer)` (the state's
    meta-parameters and traced settings, the envs and optimiser they make) over k updates, `train` is `step` of
    `init` over every update. `config` is static, `defaults` its traced values or None
    (`metadisco.trainers.hyper.split_config`). `init_extra(params, obs) -> TrainState.extra`, when given, makes
    what the algorithm carries beside the shared state (it draws no key: the shared state's keys stay those of
    every algorithm)."""

    traced = hyper_class(config)

    def init(key: jax.Array, meta_params, hyper: Hyper | None = None) -> TrainState:
        state = initial_state(key, meta_params, resolve_hyper(hyper, defaults, traced), network, env, config,
                              objective)
        return state if init_extra is None else state._replace(extra=init_extra(state.params, state.obs))

    def step(state: TrainState, num_steps: int) -> tuple[TrainState, Metrics]:
        meta, hyper = state.meta, state.hyper
        update = make_update(meta, hyper, trainer_envs(env, config, hyper),
                             trainer_optimizer(objective, config, meta, hyper))
        return jax.lax.scan(update, state, None, num_steps)

    def train(key: jax.Array, meta_params, hyper: Hyper | None = None) -> TrainResult:
        state, metrics = step(init(key, meta_params, hyper), config.num_updates)
        return TrainResult(metrics, state.params)

    return Trainer(init, step, train, config.num_updates)


def initial_state(key: jax.Array, meta_params, hyper: Hyper, network, env, config: TrainConfig,
                  objective: Objective) -> TrainState:
    """A trainer's state before its first update (`assemble_trainer`'s `init`): envs reset, `network` initialised, the
    objective's optimiser state, update counter 0."""
    key, init_key, reset_key = jax.random.split(key, 3)
    obs, env_state = trainer_envs(env, config, hyper).reset(reset_key)
    params = network.init(init_key, obs[:1])
    opt_state = trainer_optimizer(objective, config, meta_params, hyper).init(params)
    return TrainState(params, opt_state, env_state, obs, key, jnp.int32(0), meta_params, hyper)
