"""OPEN's network rows-first (the old layout) against features-first (the new): the optimiser's step alone and a
whole Breakout training update, in one checkout at a time, so run it once per checkout, alternating:

    git worktree add /tmp/before e806795          # the last commit with the rows-first network
    for i in 1 2 3; do
      PYTHONPATH=/tmp/before python results/bench/open_layout.py; python results/bench/open_layout.py
    done

Prints, per process: the checkout, ms per OPEN optimiser step (32 steps of Breakout's 59,908 parameters in one
program, median of 5) and ms per training update of Adam's and OPEN's PPO (8 updates of 8,192 env steps, median
of 5). The earlier output is `open_layout.txt`.
"""

import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import metadisco
from metadisco.bench.train import _small_random_meta
from metadisco.envs import make_env
from metadisco.objectives import OPTIMIZERS, Objective
from metadisco.objectives.registry import OptimizerContext
from metadisco.runs.seeds import resolve_config, seed_keys
from metadisco.trainers import make_trainer
from metadisco.trainers.networks import make_network, optimizer_layout, unit_activations

ENV = "Breakout-MinAtar"


def median_seconds(fn, *args, repeats: int = 5) -> float:
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def optimiser_step_ms(steps: int = 32) -> float:
    env, config = make_env(ENV), resolve_config(ENV, timesteps=156_250)
    network = make_network(env.spec, config.hidden_sizes, config.activation)
    obs = jnp.zeros((1,) + tuple(env.spec.obs_shape))
    params = network.init(jax.random.PRNGKey(0), obs)
    optimiser = OPTIMIZERS.make("open")
    meta = jax.tree.map(lambda x: 0.01 * jax.random.normal(jax.random.PRNGKey(1), x.shape), optimiser.zero_meta())
    tx = optimiser(meta, (5e-3, 0.5, None), None)
    mask, layers = optimizer_layout(params)
    batch = jnp.zeros((128,) + tuple(env.spec.obs_shape))
    _, captured = network.apply(params, batch, capture_intermediates=True, mutable=["intermediates"])
    context = OptimizerContext(unit_activations(network, params, captured["intermediates"]), mask, layers,
                               jnp.float32(0.3), jnp.float32(0.5), jax.random.PRNGKey(3))
    grads = jax.tree.map(lambda x: 0.01 * jax.random.normal(jax.random.PRNGKey(2), x.shape), params)

    @jax.jit
    def run(state, params):
        def body(_, carry):
            state, params = carry
            updates, state = tx.update(grads, state, params, context=context)
            return state, jax.tree.map(jnp.add, params, updates)
        return jax.lax.fori_loop(0, steps, body, (state, params))

    return median_seconds(run, tx.init(params), params) / steps * 1e3


def update_ms(updates: int = 8) -> dict:
    config, env = resolve_config(ENV, timesteps=8192 * updates), make_env(ENV)
    out = {}
    for name, objective in (("adam", Objective()), ("open", Objective(optimizer=OPTIMIZERS.make("open")))):
        train = make_trainer(config, env, objective).train
        fn = jax.jit(lambda key, meta, train=train: train(key, meta).metrics.episode_return)
        out[name] = round(median_seconds(fn, seed_keys(1)[0], _small_random_meta(objective, 0)) / updates * 1e3, 1)
    return out


if __name__ == "__main__":
    print(json.dumps({"checkout": metadisco.__file__.rsplit("/metadisco/", 1)[0],
                      "open_step_ms": round(optimiser_step_ms(), 2), "update_ms": update_ms()}))
