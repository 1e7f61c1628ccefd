"""Wrappers around a `VecEnv`: episode logging, action clipping, observation and reward normalisation.

Each wrapper keeps its own statistics in its state (a NamedTuple around the inner state) and returns it anew;
nothing is mutated. Normalisation statistics are shared across the vectorised envs (one running mean and
variance per observation feature), as in PureJaxRL / Stable-Baselines' VecNormalize.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class VecWrapper:
    """Base of the wrappers: `reset(key)` and `step(keys [num_envs], state, action [num_envs, ...])`."""

    def __init__(self, env):
        self.env = env
        self.spec = env.spec
        self.num_envs = env.num_envs


# ------------------------------------------------------------------------------------------------ logging


class EpisodeStats(NamedTuple):
    inner: Any
    episode_return: jax.Array  # [num_envs] running undiscounted return of the current episode
    episode_length: jax.Array  # [num_envs]


class LogEpisodes(VecWrapper):
    """Adds `info['episode_return']` and `info['episode_length']`, valid where an episode ended this step.

    Consumers average these over finished episodes only (`terminated | truncated`), never over all steps: a
    plain mean would count the zeros of episodes still running.
    """

    def reset(self, key):
        obs, state = self.env.reset(key)
        zeros = jnp.zeros((self.num_envs,), jnp.float32)
        return obs, EpisodeStats(state, zeros, jnp.zeros((self.num_envs,), jnp.int32))

    def step(self, keys, state: EpisodeStats, action):
        inner, out = self.env.step(keys, state.inner, action)
        ret = state.episode_return + out.reward
        length = state.episode_length + 1
        done = jnp.logical_or(out.terminated, out.truncated)
        info = {**out.info, "episode_return": ret, "episode_length": length}
        new = EpisodeStats(inner, jnp.where(done, 0.0, ret), jnp.where(done, 0, length))
        return new, out._replace(info=info)


# ------------------------------------------------------------------------------------------------ actions


class ClipAction(VecWrapper):
    """Clips continuous actions to the action bounds (the policy's log-prob uses the unclipped sample)."""

    def reset(self, key):
        return self.env.reset(key)

    def step(self, keys, state, action):
        low = jnp.asarray(self.spec.action_low, jnp.float32)
        high = jnp.asarray(self.spec.action_high, jnp.float32)
        return self.env.step(keys, state, jnp.clip(action, low, high))


# ------------------------------------------------------------------------------------------ normalisation


class RunningMoments(NamedTuple):
    mean: jax.Array
    var: jax.Array
    count: jax.Array


def init_moments(shape: tuple[int, ...]) -> RunningMoments:
    # A tiny prior count avoids dividing by zero before the first batch, as in Stable-Baselines.
    return RunningMoments(jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32),
                          jnp.asarray(1e-4, jnp.float32))


def update_moments(moments: RunningMoments, batch: jax.Array) -> RunningMoments:
    """Chan et al.'s parallel update of mean and variance with a batch along axis 0."""
    batch_mean = jnp.mean(batch, axis=0)
    batch_var = jnp.var(batch, axis=0)
    batch_count = batch.shape[0]
    delta = batch_mean - moments.mean
    total = moments.count + batch_count
    mean = moments.mean + delta * batch_count / total
    m2 = moments.var * moments.count + batch_var * batch_count + delta**2 * moments.count * batch_count / total
    return RunningMoments(mean, m2 / total, total)


class NormState(NamedTuple):
    inner: Any
    moments: RunningMoments


class NormalizeObservation(VecWrapper):
    """Standardises observations (and `final_obs`, with the same statistics) by running moments."""

    def _normalize(self, moments, obs):
        return (obs - moments.mean) / jnp.sqrt(moments.var + 1e-8)

    def reset(self, key):
        obs, state = self.env.reset(key)
        moments = update_moments(init_moments(obs.shape[1:]), obs)
        return self._normalize(moments, obs), NormState(state, moments)

    def step(self, keys, state: NormState, action):
        inner, out = self.env.step(keys, state.inner, action)
        moments = update_moments(state.moments, out.obs)
        out = out._replace(obs=self._normalize(moments, out.obs),
                           final_obs=self._normalize(moments, out.final_obs))
        return NormState(inner, moments), out


class RewardNormState(NamedTuple):
    inner: Any
    moments: RunningMoments
    discounted_return: jax.Array  # [num_envs]


class NormalizeReward(VecWrapper):
    """Scales rewards by the running standard deviation of the discounted return (not re-centred)."""

    def __init__(self, env, gamma: float):
        super().__init__(env)
        self.gamma = gamma

    def reset(self, key):
        obs, state = self.env.reset(key)
        return obs, RewardNormState(state, init_moments(()), jnp.zeros((self.num_envs,), jnp.float32))

    def step(self, keys, state: RewardNormState, action):
        inner, out = self.env.step(keys, state.inner, action)
        done = jnp.logical_or(out.terminated, out.truncated)
        discounted = state.discounted_return * self.gamma * (1.0 - done) + out.reward
        moments = update_moments(state.moments, discounted)
        reward = out.reward / jnp.sqrt(moments.var + 1e-8)
        return RewardNormState(inner, moments, discounted), out._replace(reward=reward)
