"""metadisco's Seaquest (`metadisco.envs.seaquest`: gymnax's step traced with 40-row entity buffers) against
gymnax's own (100 rows), alternating in one process (issue 45, item 1):

1. the env alone: 64 vmapped envs, random actions, 200 steps from states 60 steps in, median of 5 rounds;
2. short_long_minatar's validation run of Seaquest as the trainer runs it: PPO at 625,000 env steps, 2 seeds, one
   device, compile apart, 2 rounds; every metric of both equal bit for bit.

    python results/bench/seaquest_bounded.py > results/bench/seaquest_bounded.txt
"""

import statistics
import time
from importlib.metadata import version

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments.minatar.seaquest import MinSeaquest

from metadisco.envs.gymnax_adapter import GymnaxEnv
from metadisco.envs.registry import register_env
from metadisco.envs.seaquest import BoundedSeaquest
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.runs.seeds import resolve_config, train_seeds

GYMNAX_ID = "Seaquest-MinAtar-gymnax-100-rows"


@register_env(GYMNAX_ID)
def gymnax_seaquest():
    env = GymnaxEnv("Seaquest-MinAtar")
    env.env = MinSeaquest()  # gymnax's own, in place of metadisco's
    return env


def env_alone(rounds: int = 5, n: int = 64, steps: int = 200) -> None:
    params = MinSeaquest().default_params
    runs = {}
    for name, env in (("gymnax (100 rows)", MinSeaquest()), ("metadisco (40 rows)", BoundedSeaquest())):
        _, state = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(0), n), params)

        def body(state, key, env=env):
            keys = jax.random.split(key, n + 1)
            actions = jax.random.randint(keys[0], (n,), 0, 6)
            return jax.vmap(env.step, in_axes=(0, 0, 0, None))(keys[1:], state, actions, params)[1], None

        run = jax.jit(lambda state, key, body=body, k=steps: jax.lax.scan(body, state, jax.random.split(key, k))[0])
        state = run(state, jax.random.PRNGKey(1))  # 200 steps in (compiles)
        runs[name] = (run, state)
    seconds = {name: [] for name in runs}
    for r in range(rounds):
        for name, (run, state) in runs.items():
            start = time.perf_counter()
            jax.block_until_ready(run(state, jax.random.PRNGKey(2 + r)))
            seconds[name].append(time.perf_counter() - start)
    base = statistics.median(seconds["gymnax (100 rows)"])
    for name, s in seconds.items():
        m = statistics.median(s)
        print(f"env alone  {name:20s} {m / steps * 1e6:8.0f} us per step of {n} envs  {n * steps / m:10,.0f} "
              f"env steps/s  {base / m:5.2f}x", flush=True)


def validation_run(rounds: int = 2) -> None:
    ppo = BUILTIN_OBJECTIVES["ppo"]
    config = resolve_config("Seaquest-MinAtar", timesteps=625_000)
    seconds, metrics = {}, {}
    for r in range(rounds):
        for env_id in (GYMNAX_ID, "Seaquest-MinAtar"):
            result = train_seeds(env_id, ppo, ppo.zero_meta(), config, 2, 0, jax.local_devices()[:1])
            seconds.setdefault(env_id, []).append(result.train_seconds)
            metrics.setdefault(env_id, result.metrics)
            print(f"  round {r}: {env_id:34s} compile {result.compile_seconds:5.1f} s, train "
                  f"{result.train_seconds:6.1f} s, final return {np.round(result.final_return, 3).tolist()}",
                  flush=True)
    equal = all(np.array_equal(a, b, equal_nan=True) for a, b in
                zip(jax.tree.leaves(metrics[GYMNAX_ID]), jax.tree.leaves(metrics["Seaquest-MinAtar"]), strict=True))
    base = statistics.median(seconds[GYMNAX_ID])
    for env_id, s in seconds.items():
        steps = 2 * config.num_updates * config.batch_size
        m = statistics.median(s)
        print(f"validation {env_id:34s} {m:6.1f} s  {steps / m:8,.0f} env steps/s  {base / m:5.2f}x", flush=True)
    print(f"every metric of the two runs equal bit for bit: {equal}", flush=True)


if __name__ == "__main__":
    print(f"jax {jax.__version__}, gymnax {version('gymnax')}, {jax.device_count()} device(s)", flush=True)
    assert jnp.zeros(1).device.platform == "cpu"
    env_alone()
    validation_run()
