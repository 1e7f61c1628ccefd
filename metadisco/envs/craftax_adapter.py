"""Craftax (Matthews et al., ICML 2024) behind the `Env` interface: the symbolic envs, with termination and
truncation kept apart, and the episode's achievements in `info`.

Craftax's own `step` folds the time limit into `done` (`is_game_over`: out of steps, dead, in lava, or the
boss beaten) and auto-resets. Here the env without auto-reset steps, and the two causes are told apart by asking
`is_terminal` again of the same state with its step counter at 0: only a real ending is still terminal then, so
an episode that merely ran out of time is truncated (bootstrapped), never terminal. The reset is done here, as
in `GymnaxEnv`, keeping the observation the episode ended in (`final_obs`).

`info["achievements"]` [num_achievements] is 1.0 for each achievement unlocked in the episode that ended at this
step (0 elsewhere); the trainers average it over finished episodes (`Metrics.achievements`).

Needs the optional `craftax` extra (`pip install -e '.[craftax]'`); ids are `craftax/<Craftax id>`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.envs.core import EnvSpec, EnvStep

CRAFTAX_PREFIX = "craftax/"
CRAFTAX_IDS = ("Craftax-Classic-Symbolic-v1", "Craftax-Symbolic-v1")


def available() -> bool:
    try:
        import craftax.craftax_env  # noqa: F401
    except ImportError:
        return False
    return True


class CraftaxEnv:
    """A symbolic Craftax env with flat float32 observations."""

    def __init__(self, env_id: str, name: str):
        from craftax.craftax_env import make_craftax_env_from_name

        self.env = make_craftax_env_from_name(name, auto_reset=False)
        self.params = self.env.default_params
        obs_size = int(np.prod(self.env.observation_space(self.params).shape))
        self.spec = EnvSpec(env_id, (obs_size,), True, int(self.env.action_space(self.params).n))
        module = "craftax.craftax_classic.constants" if "Classic" in name else "craftax.craftax.constants"
        achievement = __import__(module, fromlist=["Achievement"]).Achievement
        self.achievement_names = tuple(a.name.lower() for a in sorted(achievement, key=lambda a: a.value))

    def reset(self, key):
        obs, state = self.env.reset(key, self.params)
        return jnp.reshape(obs, (-1,)).astype(jnp.float32), state

    def step(self, key, state, action):
        step_key, reset_key = jax.random.split(key)
        obs, next_state, reward, done, _ = self.env.step(step_key, state, action, self.params)
        terminated = jnp.logical_and(done, self.env.is_terminal(next_state.replace(timestep=0), self.params))
        truncated = jnp.logical_and(done, jnp.logical_not(terminated))
        reset_obs, reset_state = self.env.reset(reset_key, self.params)
        state = jax.tree.map(lambda r, s: jnp.where(done, r, s), reset_state, next_state)
        final_obs = jnp.reshape(obs, (-1,)).astype(jnp.float32)
        achievements = jnp.where(done, next_state.achievements.astype(jnp.float32), 0.0)
        return state, EnvStep(
            obs=jnp.where(done, jnp.reshape(reset_obs, (-1,)).astype(jnp.float32), final_obs),
            reward=jnp.asarray(reward, jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_obs=final_obs,
            info={"achievements": achievements},
        )
