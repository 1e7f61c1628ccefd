"""brax environments behind the `Env` interface, keeping time-limit truncation apart from termination.

brax's own training wrappers fold the time limit into `done` and record `truncation` in `state.info`; here the
episode step counter is ours, so `truncated` is exact and the final observation is kept for bootstrapping.
Like brax's `AutoResetWrapper`, a finished episode restarts from the state this env was first reset to (a
fresh reset every step would cost a physics initialisation per step, because `vmap` turns `cond` into both
branches).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from metadisco.envs.core import EnvSpec, EnvStep


class BraxEnvState(NamedTuple):
    state: Any  # brax.envs.base.State
    first: Any  # the state episodes restart from
    time: jax.Array


class BraxEnv:
    def __init__(self, env_id: str, name: str, episode_length: int = 1000, backend: str | None = None):
        from brax import envs

        kwargs = {"backend": backend} if backend else {}
        self.env = envs.get_environment(name, **kwargs)
        self.episode_length = episode_length
        size = int(self.env.action_size)
        self.spec = EnvSpec(env_id, (int(self.env.observation_size),), False, size, (-1.0,) * size,
                            (1.0,) * size)

    def reset(self, key):
        state = self.env.reset(key)
        return state.obs.astype(jnp.float32), BraxEnvState(state, state, jnp.zeros((), jnp.int32))

    def step(self, key, env_state: BraxEnvState, action):
        del key  # brax dynamics are deterministic given the action
        nxt = self.env.step(env_state.state, action)
        time = env_state.time + 1
        terminated = nxt.done > 0.5
        truncated = jnp.logical_and(time >= self.episode_length, jnp.logical_not(terminated))
        done = jnp.logical_or(terminated, truncated)
        restart = jax.tree.map(lambda a, b: jnp.where(done, a, b), env_state.first, nxt)
        # The restarted state must not carry a done flag into the next step.
        restart = restart.replace(done=jnp.zeros_like(nxt.done))
        new = BraxEnvState(restart, env_state.first, jnp.where(done, 0, time))
        return new, EnvStep(
            obs=restart.obs.astype(jnp.float32),
            reward=nxt.reward.astype(jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_obs=nxt.obs.astype(jnp.float32),
            info={},
        )
