"""The random policy's score: the zero point of every normalised score (meta-training's `paired` fitness,
evaluation's normalised IQM), measured once per env and cached (`metadisco.runs.baseline_cache`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from metadisco.envs import make_env, make_vec_env
from metadisco.runs import baseline_cache


def cached_random_return(env_id: str, seed: int = 0) -> float:
    """`random_policy_return` at its defaults, through the baseline cache (`metadisco.runs.baseline_cache`): meta-train,
    probe and evaluate roll out the same random policy on the same envs."""
    settings = {"env": env_id, "seed": seed, "num_envs": 16, "num_steps": 1000, "max_chunks": 10}
    return baseline_cache.cached("random_return", settings, lambda: random_policy_return(env_id, seed=seed),
                                 baseline_cache.cacheable(env_id))


def random_policy_return(env_id: str, num_envs: int = 16, num_steps: int = 1000, seed: int = 0,
                         max_chunks: int = 10) -> float:
    """Mean return of the episodes a uniformly random policy finishes in `num_envs` envs.

    The zero point of normalised scores. The envs run in chunks of `num_steps` steps until at least `num_envs`
    episodes have ended, or `max_chunks` chunks: one chunk for most envs, more where episodes outlast it
    (Freeway-MinAtar's 2,500 steps). NaN if no episode ends in `max_chunks * num_steps` steps.
    """
    env = make_env(env_id)
    spec = env.spec
    vec = make_vec_env(env, num_envs, normalize_obs=False, normalize_reward=False, gamma=1.0)

    def chunk(state, key):
        def step(carry, _):
            state, key = carry
            key, act_key, step_key = jax.random.split(key, 3)
            if spec.discrete:
                action = jax.random.randint(act_key, (num_envs,), 0, spec.action_size)
            else:
                action = jax.random.uniform(act_key, (num_envs, spec.action_size), minval=jnp.array(spec.action_low),
                                            maxval=jnp.array(spec.action_high))
            state, out = vec.step(jax.random.split(step_key, num_envs), state, action)  # per-env keys
            done = jnp.logical_or(out.terminated, out.truncated)
            return (state, key), (jnp.sum(jnp.where(done, out.info["episode_return"], 0.0)), jnp.sum(done))

        (state, key), (sums, counts) = jax.lax.scan(step, (state, key), None, num_steps)
        return state, key, jnp.sum(sums), jnp.sum(counts)

    key, reset_key = jax.random.split(jax.random.PRNGKey(seed))
    _, state = jax.jit(vec.reset)(reset_key)
    run_chunk = jax.jit(chunk)
    total, count = jnp.float32(0.0), jnp.int32(0)
    for _ in range(max_chunks):
        state, key, chunk_total, chunk_count = run_chunk(state, key)
        total, count = total + chunk_total, count + chunk_count
        if int(count) >= num_envs:
            break
    return float(total / count) if int(count) > 0 else float("nan")
