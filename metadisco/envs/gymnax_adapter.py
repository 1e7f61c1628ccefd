"""gymnax environments behind the `Env` interface (gymnax 1.x: separate terminated / truncated flags)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.envs.core import EnvSpec, EnvStep


def _flatten(obs: jax.Array) -> jax.Array:
    # MLP agents see a flat vector (MinAtar's 10x10xC grids included).
    return jnp.reshape(obs, (-1,)).astype(jnp.float32)


class GymnaxEnv:
    """A gymnax environment with flattened float32 observations."""

    def __init__(self, env_id: str):
        import gymnax

        from metadisco.envs.seaquest import bounded

        env, self.params = gymnax.make(env_id)
        self.env = bounded(env, self.params)  # Seaquest with smaller entity buffers: the same bits, faster
        obs_space = self.env.observation_space(self.params)
        action_space = self.env.action_space(self.params)
        obs_size = int(np.prod(obs_space.shape))
        if hasattr(action_space, "n"):
            self.spec = EnvSpec(env_id, (obs_size,), True, int(action_space.n))
        else:
            shape = tuple(action_space.shape) or (1,)
            size = int(np.prod(shape))
            low = np.broadcast_to(np.asarray(action_space.low, np.float32), (size,))
            high = np.broadcast_to(np.asarray(action_space.high, np.float32), (size,))
            self.spec = EnvSpec(env_id, (obs_size,), False, size, tuple(map(float, low)),
                                tuple(map(float, high)))
            self._action_shape = tuple(action_space.shape)

    def reset(self, key):
        obs, state = self.env.reset(key, self.params)
        return _flatten(obs), state

    def step(self, key, state, action):
        if not self.spec.discrete:
            action = jnp.reshape(action, self._action_shape)
        obs, state, reward, terminated, truncated, info = self.env.step(key, state, action, self.params)
        terminated = jnp.asarray(terminated, jnp.bool_)
        # gymnax counts an episode that terminates on its last allowed step as both; it is terminal.
        truncated = jnp.logical_and(jnp.asarray(truncated, jnp.bool_), jnp.logical_not(terminated))
        return state, EnvStep(
            obs=_flatten(obs),
            reward=jnp.asarray(reward, jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_obs=_flatten(info["final_observation"]),
            info={},
        )
