"""The one environment interface the trainer sees, for gymnax and brax alike.

An `Env` is a single (unbatched) environment with automatic reset. `step` returns the post-reset observation
for the next step and, apart, the observation the episode actually ended in (`final_obs`), so the trainer can
bootstrap the value at a time-limit truncation: truncation is never merged into termination.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import jax


@dataclass(frozen=True)
class EnvSpec:
    """Shapes and action space of an environment.

    For discrete actions `action_size` is the number of actions; for continuous ones it is the action
    dimension and `action_low` / `action_high` are the per-dimension bounds.
    """

    env_id: str
    obs_shape: tuple[int, ...]
    discrete: bool
    action_size: int
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()

    def describe_actions(self) -> str:
        if self.discrete:
            return f"Discrete({self.action_size})"
        low = min(self.action_low) if self.action_low else float("-inf")
        high = max(self.action_high) if self.action_high else float("inf")
        return f"Box({low:g}, {high:g}, ({self.action_size},))"


class EnvStep(NamedTuple):
    """What one step of an environment returns (batched along a leading axis in a `VecEnv`).

    obs:        observation to act on next; after the end of an episode, the first of the next one.
    reward:     reward of this step, float32.
    terminated: the episode ended in a terminal state (no bootstrapping).
    truncated:  the episode was cut by a time limit (bootstrap from `final_obs`).
    final_obs:  the observation this step reached, before any reset.
    info:       wrapper extras, e.g. `episode_return` (valid where `terminated | truncated`).
    """

    obs: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: jax.Array
    info: dict[str, jax.Array]


class Env(Protocol):
    """A single environment with automatic reset."""

    spec: EnvSpec

    def reset(self, key: jax.Array) -> tuple[jax.Array, Any]: ...

    def step(self, key: jax.Array, state: Any, action: jax.Array) -> tuple[Any, EnvStep]: ...


class VecEnv:
    """`num_envs` copies of an `Env`, stepped together with `jax.vmap`; wrappers go around this."""

    def __init__(self, env: Env, num_envs: int):
        self.env = env
        self.spec = env.spec
        self.num_envs = num_envs

    def reset(self, key: jax.Array) -> tuple[jax.Array, Any]:
        return jax.vmap(self.env.reset)(jax.random.split(key, self.num_envs))

    def step(self, keys: jax.Array, state: Any, action: jax.Array) -> tuple[Any, EnvStep]:
        """One step of every env; `keys` are per-env keys [num_envs] (split once per rollout, not per step)."""
        return jax.vmap(self.env.step)(keys, state, action)
