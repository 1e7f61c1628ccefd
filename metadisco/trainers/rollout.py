"""The rollout every trainer runs: `num_steps` steps of `num_envs` vectorised envs with the agent's current
parameters, as one `lax.scan` (PureJaxRL's `_env_step`), written once for every algorithm.

    (env_state, obs), transitions, episodes = rollout(envs, env_state, obs, act, record, noise, step_keys, unroll)

An algorithm gives what differs: `act(obs, noise_t) -> (action, aux)`, its policy at one step (PPO samples from
its policy with Gumbel or Gaussian noise, PQN and DQN act epsilon-greedily on their Q-values, an update rule's agent
samples from its logits), and `record(obs, action, aux, out) -> transition`, what it keeps of that step (`out`
is the env's `EnvStep`; `aux` what `act` computed on the way, e.g. the policy and value). The per-step randomness
(`noise`, leaves [T, ...]) and the env steps' keys (`step_keys`, [T, N]) are drawn by the caller beforehand, in
vectorised calls, so each algorithm keeps its own key stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from metadisco.trainers.episodes import EpisodeSums, step_sums

# act(obs [N, ...], noise_t) -> (action [N, ...], aux): the policy at one step; aux is what `record` reads of it.
Act = Callable[[jax.Array, Any], tuple[jax.Array, Any]]
# record(obs, action, aux, out: EnvStep) -> transition: what the algorithm keeps of one step, stacked to [T, N, ...].
Record = Callable[[jax.Array, jax.Array, Any, Any], Any]


def rollout(envs, env_state, obs: jax.Array, act: Act, record: Record, noise, step_keys: jax.Array,
            unroll: int) -> tuple[tuple[Any, jax.Array], Any, EpisodeSums]:
    """Step `envs` (a `metadisco.envs.VecEnv`) T times from (`env_state`, `obs`), acting with `act`.

    noise:     a pytree of [T, ...] leaves, `act`'s per-step input (its randomness).
    step_keys: [T, N] keys, one per env step.
    unroll:    steps per loop iteration of the scan (`metadisco.trainers.base.rollout_unroll`).
    Returns ((env_state, obs) after the last step, `record`'s transitions [T, N, ...], the [T] sums of the
    episodes that ended at each step).
    """

    def env_step(carry, xs):
        env_state, obs = carry
        step_noise, keys = xs
        action, aux = act(obs, step_noise)
        env_state, out = envs.step(keys, env_state, action)
        return (env_state, out.obs), (record(obs, action, aux, out), step_sums(out))

    carry, (transitions, episodes) = jax.lax.scan(env_step, (env_state, obs), (noise, step_keys), unroll=unroll)
    return carry, transitions, episodes
