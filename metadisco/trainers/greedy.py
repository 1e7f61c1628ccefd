"""Deterministic evaluation episodes: the trained agent's mode, the way DiscoBench and OPEN score an agent.

After training, `num_episodes` fresh episodes are played in parallel with the policy's mode (argmax of the
logits for discrete actions, the Gaussian's mean, clipped to the bounds, for continuous ones; argmax Q for
PQN), each until it first ends (terminated or truncated by the env's time limit), and the undiscounted return
of each is recorded. An agent trained with observation normalisation sees observations normalised by the
statistics it ended training with, frozen (DiscoBench's `main.py` plays 16 such episodes per trained agent and
reports their mean; OPEN's `eval.py` does the same).

    play = make_greedy_returns(config, env, num_episodes=16)
    returns = play(params, key, env_state)     # [num_episodes]; env_state: the trainer's final one

Shapes: `params` one agent's; `key` one PRNG key; the result [num_episodes] float32. Every trainer plays them
when its config says so (`TrainConfig.eval_episodes`, `with_evaluation`, applied by `make_trainer`): their mean
is `Metrics.eval_return` at the last update, and the `eval_return` fitness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from metadisco.core.streams import GREEDY_EVAL_STREAM
from metadisco.envs.core import VecEnv
from metadisco.envs.wrappers import NormState, RunningMoments
from metadisco.trainers.base import Trainer, TrainResult
from metadisco.trainers.config import TrainConfig

DEFAULT_EVAL_EPISODES = 16  # DiscoBench's and OPEN's count per trained agent
MAX_EPISODE_STEPS = 100_000  # every built-in env has a time limit far below this; a plugin's may not


def observation_moments(env_state: Any) -> RunningMoments | None:
    """The observation normaliser's running moments inside a trainer's (wrapped) env state, or None when the
    envs were not normalised. Wrappers nest their state as `.inner` (`metadisco.envs.wrappers`)."""
    while env_state is not None and hasattr(env_state, "inner"):
        if isinstance(env_state, NormState):
            return env_state.moments
        env_state = env_state.inner
    return None


def mode_action_fn(config: TrainConfig, env, objective=None) -> Callable[[Any, jax.Array], jax.Array]:
    """(params, obs [n, obs_dim]) -> the agent's most likely action [n] or [n, action_dim], as its algorithm
    defines it (`Algorithm.mode_action`; an update rule's agent is the objective's)."""
    from metadisco.trainers.algorithm import get_algorithm

    return get_algorithm(config.algorithm).mode_action(config, env, objective)


class _Play(NamedTuple):
    key: jax.Array
    steps: jax.Array  # int32: steps played so far
    state: Any
    obs: jax.Array
    returns: jax.Array  # [num_episodes]
    done: jax.Array  # [num_episodes] bool: that episode has ended (its return is final)


def make_greedy_returns(config: TrainConfig, env, num_episodes: int, max_steps: int = MAX_EPISODE_STEPS,
                        objective=None) -> Callable[[Any, jax.Array, Any], jax.Array]:
    """`play(params, key, env_state) -> [num_episodes]` undiscounted returns of the agent's mode, one episode
    each; `env_state` is the trainer's final env state (for its frozen observation statistics; None: raw
    observations). An episode still running after `max_steps` (an env without a time limit) has no return:
    NaN, as a training seed that finished no episode."""
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    act = mode_action_fn(config, env, objective)
    envs = VecEnv(env, num_episodes)

    def play(params, key: jax.Array, env_state: Any = None) -> jax.Array:
        moments = observation_moments(env_state) if config.normalize_obs else None

        def observe(obs):
            return obs if moments is None else (obs - moments.mean) / jnp.sqrt(moments.var + 1e-8)

        reset_key, key = jax.random.split(key)
        obs, state = envs.reset(reset_key)
        zeros = jnp.zeros((num_episodes,), jnp.float32)

        def running(c: _Play):
            return jnp.logical_not(jnp.all(c.done)) & (c.steps < max_steps)

        def step(c: _Play) -> _Play:
            key, step_key = jax.random.split(c.key)
            state, out = envs.step(jax.random.split(step_key, num_episodes), c.state, act(params, observe(c.obs)))
            returns = c.returns + jnp.where(c.done, 0.0, out.reward)
            done = c.done | out.terminated | out.truncated
            return _Play(key, c.steps + 1, state, out.obs, returns, done)

        start = _Play(key, jnp.int32(0), state, obs, zeros, jnp.zeros((num_episodes,), bool))
        final = jax.lax.while_loop(running, step, start)
        return jnp.where(final.done, final.returns, jnp.nan)

    return play


def with_evaluation(trainer: Trainer, config: TrainConfig, env, objective=None) -> Trainer:
    """`trainer` whose `train` also plays `config.eval_episodes` deterministic episodes with the trained agent
    (from `fold_in(key, GREEDY_EVAL_STREAM)`, so the training itself is untouched) and reports their mean as
    `Metrics.eval_return`: [num_updates], NaN but at the last update (NaN there too where an episode did not end).
    `init` and `step` are the trainer's own."""
    play = make_greedy_returns(config, env, config.eval_episodes, objective=objective)

    def train(key: jax.Array, meta_params, hyper=None) -> TrainResult:
        state, metrics = trainer.step(trainer.init(key, meta_params, hyper), trainer.num_updates)
        mean = jnp.mean(play(state.params, jax.random.fold_in(key, GREEDY_EVAL_STREAM), state.env_state))
        last = jnp.arange(trainer.num_updates) == trainer.num_updates - 1
        return TrainResult(metrics._replace(eval_return=jnp.where(last, mean, jnp.nan)), state.params)

    return trainer._replace(train=train)
