"""Why short_long_minatar's validation is slow: env-only steps/s of each MinAtar game as the trainer
steps it (64 envs, random actions, one seed), and the seconds of each part of gymnax's Seaquest step alone
(200 steps of 64 vmapped envs, from states 60 steps in, so that entities exist).

The env-only line measures metadisco's Seaquest (`metadisco.envs.seaquest`, 40-row buffers) and
the parts gymnax's own (100 rows); `seaquest_step.txt` was written before, with gymnax's in both;
`seaquest_bounded.py` compares the two.

    python results/bench/seaquest_step.py > results/bench/seaquest_step.txt
"""

import time
from importlib.metadata import version

import gymnax
import jax
import jax.numpy as jnp

from metadisco.bench.train import env_only_fn
from metadisco.runs.seeds import resolve_config, seed_keys


def best_seconds(fn, *args, repeats: int = 3) -> float:
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return min(times)


def env_only() -> None:
    for env_id in ("Breakout-MinAtar", "Asterix-MinAtar", "SpaceInvaders-MinAtar", "Freeway-MinAtar",
                   "Seaquest-MinAtar"):
        config = resolve_config(env_id, timesteps=262_144)
        steps = config.num_updates * config.batch_size
        seconds = best_seconds(jax.jit(env_only_fn(env_id, config)), seed_keys(1)[0])
        print(f"{env_id:22s} {steps / seconds:12,.0f} env-only steps/s (64 envs, 1 seed)", flush=True)


def seaquest_parts(n: int = 64, steps: int = 200) -> None:
    env, params = gymnax.make("Seaquest-MinAtar")
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(0), n), params)
    advance = jax.jit(jax.vmap(lambda k, s, a: env.step_env(k, s, a, params)[1]))
    for i in range(60):
        state = advance(jax.random.split(jax.random.PRNGKey(i), n), state, jnp.full((n,), i % 6))
    parts = {
        "spawn": lambda k, s, a: env._spawn_entities(k, k, s, params),
        "agent": lambda k, s, a: env._step_agent(s, env.action_set[a], params),
        "friendly bullets": lambda k, s, a: env._step_friendly_bullets(s)[0],
        "divers": lambda k, s, a: env._step_divers(s, params),
        "enemy subs": lambda k, s, a: env._step_enemy_subs(s, params)[0],
        "enemy bullets": lambda k, s, a: env._step_enemy_bullets(s)[0],
        "enemy fish": lambda k, s, a: env._step_enemy_fish(s)[0],
        "timers": lambda k, s, a: env._step_timers(s, params)[0],
        "whole step_env": lambda k, s, a: env.step_env(k, s, a, params)[1],
        "reset_env": lambda k, s, a: env.reset_env(k, params)[1],
    }
    for name, part in parts.items():
        batched = jax.vmap(part)

        def body(state, key, batched=batched):
            return batched(jax.random.split(key, n), state, jax.random.randint(key, (n,), 0, 6)), None

        run = jax.jit(lambda state, key, body=body: jax.lax.scan(body, state, jax.random.split(key, steps))[0])
        seconds = best_seconds(run, state, jax.random.PRNGKey(1))
        print(f"Seaquest {name:16s} {seconds / steps * 1e6:9.1f} us per step of {n} envs", flush=True)


if __name__ == "__main__":
    print(f"jax {jax.__version__}, gymnax {version('gymnax')}, "
          f"{jax.device_count()} device(s)")
    env_only()
    seaquest_parts()
