"""Throughput figures: trainer env-steps per second against the env alone, compile time apart.

The env-only loop steps the same vectorised env (same wrappers, same env count) with random actions in a
compiled scan, on one device: a ceiling no PPO approaches at 4 envs, kept as a secondary figure. The trainer
runs as `metadisco train` runs it (seeds sharded over every device). `metadisco bench --peers` adds the
figures users compare: the same training with rejax's PPO (`bench_peers`).
"""

from __future__ import annotations

import platform
import resource
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.envs import make_env, make_vec_env
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.runs.seeds import resolve_config, seed_keys, seeds_program
from metadisco.trainers import make_trainer
from metadisco.trainers.algorithm import get_algorithm
from metadisco.trainers.config import TrainConfig


@dataclass(frozen=True)
class BenchCase:
    env_id: str
    timesteps: int  # per seed; small enough for a 2-core CPU, large enough to amortise dispatch


DEFAULT_CASES = (BenchCase("CartPole-v1", 262_144), BenchCase("SpaceInvaders-MinAtar", 262_144))


def timed(fn, *args, repeats: int = 2):
    """(compile seconds, best run seconds over `repeats`) of a function (jitted here unless it is already)."""
    start = time.perf_counter()
    compiled = (fn if hasattr(fn, "lower") else jax.jit(fn)).lower(*args).compile()
    compile_s = time.perf_counter() - start
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        best = min(best, time.perf_counter() - start)
    return compile_s, best


def env_only_fn(env_id: str, config: TrainConfig, num_seeds: int = 1):
    """A function key -> total reward that steps the env with random actions, as often as training does."""
    env = make_env(env_id)
    vec = make_vec_env(env, config.num_envs, normalize_obs=config.normalize_obs,
                       normalize_reward=config.normalize_reward, gamma=config.gamma)
    spec = env.spec
    steps = config.num_updates * config.num_steps

    def random_action(key):
        if spec.discrete:
            return jax.random.randint(key, (config.num_envs,), 0, spec.action_size)
        return jax.random.uniform(key, (config.num_envs, spec.action_size), minval=jnp.asarray(spec.action_low),
                                  maxval=jnp.asarray(spec.action_high))

    def run(key):
        # The same structure as the trainer's rollout: keys for every step drawn up front.
        reset_key, act_key, step_key = jax.random.split(key, 3)
        _, state = vec.reset(reset_key)
        act_keys = jax.random.split(act_key, steps)
        step_keys = jax.random.split(step_key, (steps, config.num_envs))

        def step(carry, xs):
            state, total = carry
            act_key, keys = xs
            state, out = vec.step(keys, state, random_action(act_key))
            return (state, total + out.reward.sum()), None

        (_, total), _ = jax.lax.scan(step, (state, 0.0), (act_keys, step_keys))
        return total

    return jax.vmap(run) if num_seeds > 1 else run


def bench_case(case: BenchCase, seed_counts=(1, 16), peak: dict | None = None) -> dict:
    """Trainer and env-only throughput of `case` at each seed count; with `peak` (`roofline.peak_flops`), the
    trainer's FLOPs per env step, each figure's achieved FLOP/s and fraction of the peak, and (PPO) the speed of
    its network alone (`roofline.network_only_fn`) and how many times its time the trainer takes."""
    from metadisco.bench.roofline import flops_per_env_step, network_only_program, roofline

    config = resolve_config(case.env_id, timesteps=case.timesteps)
    objective = BUILTIN_OBJECTIVES["ppo"]
    meta = objective.zero_meta()
    steps = config.num_updates * config.batch_size
    out = {"env": case.env_id, "num_envs": config.num_envs, "num_steps": config.num_steps,
           "timesteps_per_seed": steps}
    if peak is not None:
        out["flops"] = flops_per_env_step(case.env_id, config, objective)
    for n in seed_counts:
        keys = seed_keys(n)
        # The trainer as `metadisco train` runs it: seeds sharded over the devices, vmapped on each.
        trainer, args, devices = seeds_program(case.env_id, objective, meta, config, n)
        compile_s, run_s = timed(trainer, *args)
        env_compile_s, env_s = timed(env_only_fn(case.env_id, config, n), keys if n > 1 else keys[0])
        out[f"seeds_{n}"] = {
            "trainer_devices": len(devices),
            "trainer_steps_per_second": n * steps / run_s,
            "env_only_steps_per_second": n * steps / env_s,
            "ratio": env_s / run_s,
            "trainer_compile_seconds": compile_s,
            "env_only_compile_seconds": env_compile_s,
        }
        if peak is not None:
            out[f"seeds_{n}"].update(roofline(out["flops"]["flops_per_env_step"], n * steps / run_s, peak))
            if get_algorithm(config.algorithm).network_passes is not None:
                network_fn, network_args = network_only_program(case.env_id, config, n, devices)
                _, network_s = timed(network_fn, *network_args)
                out[f"seeds_{n}"].update({"network_only_steps_per_second": n * steps / network_s,
                                          "trainer_over_network_only": run_s / network_s})
    out["ratio"] = out["seeds_1"]["ratio"]
    return out


def peak_memory_bytes() -> dict:
    """Peak resident memory of this process and, where the backend reports it, of the accelerator."""
    figures = {"host_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    stats = jax.devices()[0].memory_stats() or {}
    if "peak_bytes_in_use" in stats:
        figures["device_peak_bytes"] = stats["peak_bytes_in_use"]
    return figures


def machine() -> dict:
    return {"backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()],
            "jax": jax.__version__, "python": platform.python_version(), "processor": platform.processor()}


LEARNED_PIECES = ("learned_optimizer", "open", "lpo")


def learned_piece_costs(env_id: str = "CartPole-v1", timesteps: int = 65_536, seed_counts=(1,),
                        population: int = 4, pieces: tuple[str, ...] = LEARNED_PIECES) -> dict:
    """Trainer throughput with learned pieces against the PPO + Adam baseline on the same env, config and keys.

    "learned_optimizer" swaps Adam for the learned optimiser (a per-parameter MLP over gradient, momenta, value
    and progress), "open" for OPEN (Goldie et al., NeurIPS 2024: a per-parameter GRU and MLP that also reads the
    layers' activations, `metadisco.objectives.open_optimizer`) and "lpo" the PPO clip for the LPO drift network.
    Per seed count: `steps_per_second`, `seconds_per_update` (one update: rollout, GAE and every epoch's
    minibatch steps) and `cost`, baseline seconds-per-step multiples (1.0 = free). `population`: meta-training's
    shape, `population` members with their own meta-parameters (and keys), one seed each, vmapped in one
    program: its steps/s and cost. Meta-parameters are small random values, as during meta-training. `pieces`:
    which of `LEARNED_PIECES` to measure (Adam always: it is the unit).
    """
    from metadisco.objectives import DRIFTS, OPTIMIZERS, Objective

    config = resolve_config(env_id, timesteps=timesteps)
    env = make_env(env_id)
    steps = config.num_updates * config.batch_size
    unknown = sorted(set(pieces) - set(LEARNED_PIECES))
    if unknown:
        raise ValueError(f"learned_piece_costs: unknown piece {unknown[0]!r}; pieces: {', '.join(LEARNED_PIECES)}")
    every = {"learned_optimizer": Objective(optimizer=OPTIMIZERS.make("learned")),
             "open": Objective(optimizer=OPTIMIZERS.make("open")), "lpo": Objective(drift=DRIFTS.make("lpo"))}
    variants = {"adam": Objective(), **{name: every[name] for name in LEARNED_PIECES if name in pieces}}
    learned = [name for name in variants if name != "adam"]
    out = {"env": env_id, "timesteps_per_seed": steps, "num_updates": config.num_updates}
    trains = {name: make_trainer(config, env, objective).train for name, objective in variants.items()}
    for n in seed_counts:
        keys = seed_keys(n)
        figures = {}
        for name, objective in variants.items():
            meta = _small_random_meta(objective, 0)
            trainer = jax.vmap(lambda k, m, train=trains[name]: train(k, m).metrics.episode_return, in_axes=(0, None))
            compile_s, run_s = timed(trainer, keys, meta)
            figures[name] = {"steps_per_second": n * steps / run_s, "seconds_per_update": run_s / config.num_updates,
                             "compile_seconds": compile_s}
        out[f"seeds_{n}"] = _with_costs(figures, learned)
    if population:
        keys = seed_keys(population)
        figures = {}
        for name, objective in variants.items():
            metas = [_small_random_meta(objective, member) for member in range(population)]
            metas = jax.tree.map(lambda *x: jnp.stack(x), *metas) if jax.tree.leaves(metas[0]) else metas[0]
            axes = (0, 0) if jax.tree.leaves(metas) else (0, None)  # Adam: no meta-parameters
            trainer = jax.vmap(lambda k, m, train=trains[name]: train(k, m).metrics.episode_return, in_axes=axes)
            compile_s, run_s = timed(trainer, keys, metas)
            figures[name] = {"steps_per_second": population * steps / run_s, "compile_seconds": compile_s}
        out["population"] = {"members": population, **_with_costs(figures, learned)}
    return out


def _with_costs(figures: dict, learned: list[str]) -> dict:
    """`figures` with each learned piece's `cost`: Adam's steps/s over its own (1.0 = free)."""
    for name in learned:
        figures[name]["cost"] = figures["adam"]["steps_per_second"] / figures[name]["steps_per_second"]
    return figures


def _small_random_meta(objective, member: int):
    """0.01 N(0, 1) meta-parameters (member `member`'s draw), or the objective's empty ones."""
    leaves, treedef = jax.tree.flatten(objective.zero_meta())
    return jax.tree.unflatten(treedef, [0.01 * jax.random.normal(jax.random.PRNGKey(1000 * member + i), x.shape)
                                        for i, x in enumerate(leaves)])
