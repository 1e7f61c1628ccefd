"""`metadisco bench --peers`: metadisco against rejax's PPO at the same settings, in one process, alternating.

Headline figures, CartPole-v1 with the `classic` preset (4 envs x 128 steps, tanh 64x64, PureJaxRL's):

- seeds_1: env steps/s of one seed. metadisco: the program `metadisco train --seeds 1` runs (one seed cannot
  be split, so one device); rejax: `jit(algo.train)`.
- seeds_16: 16 seeds. metadisco: sharded over every device, vmapped on each (`metadisco.runs.seeds`); rejax: vmapped,
  its own way (it has no device sharding).
- population: one meta-training generation in the quickstart's shape (`QUICKSTART`: 16 members x 2 seeds x
  16,384 CartPole steps; the LPO drift, hidden 32, and lr 2.5e-3 of the quickstart this figure was first
  measured with, kept so that figures compare across versions). metadisco: the meta-training population
  program, members sharded over the devices; rejax: vmap over 16 PPO variants (clip_eps, a pytree field) x
  vmap over 2 seeds, the way rejax sweeps hyperparameters. metadisco's members carry a learned drift, rejax's
  a handcrafted one, so metadisco does slightly more work per step.
- compile: seconds to trace and compile the one-seed program (no persistent cache: `bench` turns it off), wall
  and process CPU time (XLA compiles on several threads, so wall time depends on what else runs).

PureJaxRL's `ppo.py` is the second peer of these three figures when its checkout is at hand
(`metadisco.bench.purejaxrl`: `METADISCO_PUREJAXRL` or `bench --purejaxrl DIR`): its `make_train` as written, one
seed jitted, 16 seeds vmapped, the population a vmap over 16 clip_eps values (a traced value in its config) x 2
seeds. Each figure also gives every program's `ops` (`program_ops`: kernels of one pass through every loop body,
and kernels per training update, from the compiled HLO: on a CPU XLA's CPU kernels, on a GPU its GPU kernels).

Secondary: env-only steps/s (the env with random actions, the same wrappers and env count, one seed).

MinAtar (`minatar` group; SpaceInvaders-MinAtar with the `minatar` preset, DiscoBench's PPO: 64 envs x 128 steps,
4 epochs x 8 minibatches, relu 64x64 on the flattened 10 x 10 x 6 grid, both programs): minatar_seeds_1 and
minatar_seeds_16 as above, and minatar_population, a meta-training generation in the shape of
experiments/short_long_minatar.yaml (`SHORT_LONG_MINATAR`: 16 members x 1 seed x 156,250 Breakout steps with its
TA-LPO drift, hidden 16) against 16 rejax PPO variants. Each also gets the network-only bound
(`metadisco.bench.roofline.network_only_fn`: the actor-critic's passes of the same run and nothing else, same
shapes, split over the devices as the trainer is): `trainer_over_network_only` is how many times the network's
own time the trainer takes, the most that any change outside the network could gain.

PQN: pqn_seeds_1 / pqn_seeds_16, metadisco's PQN (`algorithm: pqn`, the `pqn_classic` preset: 32 envs x 64 steps,
4 epochs x 16 minibatches, 2 x 256 LayerNorm ReLU) against rejax's PQN at the same settings (`peers.rejax_pqn`
lists what rejax does its own way), as the PPO seeds figures are measured.

With the machine's peak (`metadisco.bench.roofline`), each throughput figure also gets metadisco's FLOPs per env
step (XLA's count of its program, loops counted) and, for both programs, the FLOP/s that count implies and its
fraction of the peak (rejax does the same arithmetic at the same settings, so one count serves both).

Every figure alternates metadisco and rejax `repeats` times, each compiled once beforehand, and keeps every
sample; `ratio` is metadisco's median over rejax's (> 1: metadisco is faster; for compile, < 1 is faster).
On a shared machine, load moves absolute figures by tens of percent; alternating in one process makes the
ratio the robust figure. `load` is the 1-minute load average before and after. `cores_busy` (process CPU
seconds over wall seconds, median) shows how many cores each program kept busy.
"""

from __future__ import annotations

import os
import statistics
import time

import jax
import numpy as np

from metadisco.bench import purejaxrl
from metadisco.bench import rejax as peers
from metadisco.bench.train import env_only_fn
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.parallel import compile_cache
from metadisco.runs.seeds import resolve_config, runs_program, seed_keys, seeds_program

ENV = "CartPole-v1"
# experiments/discover_quick.yaml's shape (tests/bench/test_bench_peers.py checks they agree).
QUICKSTART = {
    "objective": {"drift": {"kind": "lpo", "hidden": 32}},
    "tasks": [{"env": ENV, "timesteps": 16_384, "seeds": 2, "train": {"lr": 0.0025}}],
    "strategy": {"name": "Open_ES", "population_size": 16, "sigma_init": 0.03, "lr": 0.03},
    "generations": 1, "eval_every": 10_000, "held_out_envs": [],
}
MINATAR_ENV = "SpaceInvaders-MinAtar"
# The peers of each algorithm with a peer: {algorithm: (env_id, config) -> key -> training run}, rejax's for PPO and
# PQN, PureJaxRL's for PPO where its checkout is at hand and its fixed network fits the config.
REJAX_PEERS = {"ppo": peers.rejax_train, "pqn": peers.rejax_pqn_train}
PUREJAXRL_PEERS = {"ppo": purejaxrl.purejaxrl_train}
# experiments/short_long_minatar.yaml's shape at its longer training length (tests/bench/test_bench_peers.py
# checks they agree).
SHORT_LONG_MINATAR = {
    "objective": {"drift": {"kind": "talpo", "hidden": 16, "horizon": False}},
    "tasks": [{"env": "Breakout-MinAtar", "timesteps": 156_250, "seeds": 1}],
    "strategy": {"name": "Open_ES", "population_size": 16, "sigma_init": 0.1, "lr": 0.01},
    "generations": 1, "eval_every": 10_000, "held_out_envs": [],
}


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _compile(fn, *args):
    """(compiled, {"seconds", "trace_seconds", "cpu_seconds"}) of trace + compile, without the persistent
    cache's help (checked). cpu_seconds is this process's CPU time over the same span."""
    hits = compile_cache.hits()
    start, cpu = time.perf_counter(), time.process_time()
    lowered = fn.lower(*args)
    traced = time.perf_counter()
    compiled = lowered.compile()
    seconds = {"seconds": time.perf_counter() - start, "trace_seconds": traced - start,
               "cpu_seconds": time.process_time() - cpu}
    if compile_cache.hits() != hits:
        raise RuntimeError("a benchmark program came from the persistent compilation cache; run with "
                           "--no-compile-cache")
    return compiled, seconds


def _run_seconds(compiled, *args) -> float:
    start = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    return time.perf_counter() - start


def _alternate(programs: dict, steps: int, repeats: int) -> dict:
    """Alternate the (compiled, args) pairs of `programs` (metadisco's first, then rejax's, then any other peer's)
    `repeats` times: env steps/s samples, medians, and metadisco's median over each peer's (`ratio` for rejax,
    `<peer>_ratio` for the others)."""
    samples = {name: [] for name in programs}
    busy = {name: [] for name in programs}
    load = [_load()]
    for _ in range(repeats):
        for name, (compiled, args) in programs.items():
            cpu = time.process_time()
            seconds = _run_seconds(compiled, *args)
            samples[name].append(steps / seconds)
            busy[name].append((time.process_time() - cpu) / seconds)
    load.append(_load())
    med = {k: statistics.median(v) for k, v in samples.items()}
    out = {"env_steps": steps, **{f"{name}_steps_per_second": med[name] for name in programs}}
    for name in programs:
        if name != "metadisco":
            out["ratio" if name == "rejax" else f"{name}_ratio"] = med["metadisco"] / med[name]
    return {**out, "samples": samples, "cores_busy": {k: statistics.median(v) for k, v in busy.items()},
            "load": load}


def program_ops(compiled, num_updates: int) -> dict:
    """What one compiled program launches, from its optimised HLO (`metadisco.parallel.cost.kernel_count`; on a
    CPU XLA's CPU kernels, on a GPU its GPU kernels): `ops`, the kernels of one pass through every loop body (each
    body once: the program's size per loop iteration), and `kernels_per_update`, every body times its trip count
    over the training updates (what one training iteration launches)."""
    from metadisco.parallel.cost import kernel_count

    text = compiled.as_text()
    return {"ops": kernel_count(text), "kernels_per_update": kernel_count(text, trips=True) / num_updates}


# Why PureJaxRL's vmapped programs are counted but not timed on a CPU of several XLA host devices.
PUREJAXRL_WEDGES = ("on a CPU split into several XLA host devices, PureJaxRL's vmapped program (16 seeds, a "
                    "population) never returns: XLA's CPU thread pool wedges in it (reproduced here with 16 seeds on 2 "
                    "host devices; it runs on 1; the known workaround, --xla_cpu_multi_thread_eigen=false, would slow "
                    "the other programs), so on such a CPU its kernels are counted and its time is not taken")


def _measured(programs: dict, vmapped: bool, steps: int, repeats: int, num_updates: int) -> dict:
    """Every program's kernels (`program_ops`) and, alternating, their speeds (`_alternate`); PureJaxRL's is left
    out of the timing when it is vmapped on a CPU of several host devices (`PUREJAXRL_WEDGES`), and the figure says
    so."""
    timed = programs
    if vmapped and jax.default_backend() == "cpu" and len(jax.devices()) > 1:
        timed = {name: program for name, program in programs.items() if name != "purejaxrl"}
    figure = {"ops": {name: program_ops(compiled, num_updates) for name, (compiled, _) in programs.items()},
              **_alternate(timed, steps, repeats)}
    if timed.keys() != programs.keys():
        figure["purejaxrl_not_timed"] = PUREJAXRL_WEDGES
    return figure


def _with_purejaxrl(config) -> bool:
    """Whether PureJaxRL's PPO is a peer of this figure: its checkout is at hand and its fixed network fits."""
    return purejaxrl.available() and purejaxrl.fits(config)


def _network_only(env_id: str, config, runs: int, devices, figure: dict, repeats: int) -> dict:
    """`figure` with the network-only bound of `runs` runs of `config` on `devices` (median of `repeats`): its
    steps/s and the trainer's time over its time (`metadisco.bench.roofline.network_only_fn`)."""
    from metadisco.bench.roofline import network_only_program

    fn, args = network_only_program(env_id, config, runs, devices)
    compiled, _ = _compile(fn, *args)
    seconds = statistics.median(_run_seconds(compiled, *args) for _ in range(repeats))
    per_second = figure["env_steps"] / seconds
    return {**figure, "network_only_steps_per_second": per_second,
            "trainer_over_network_only": per_second / figure["metadisco_steps_per_second"]}


def seeds_figure(num_seeds: int, timesteps: int, repeats: int, algorithm: str = "ppo", env_id: str = ENV,
                 network_only: bool = False) -> dict:
    """`num_seeds` seeds of `algorithm` (ppo: the env family's preset; pqn: pqn_classic) on `env_id` in metadisco
    and rejax; with `network_only`, the network-only bound beside them."""
    config = resolve_config(env_id, timesteps=timesteps, algorithm=algorithm)
    objective = BUILTIN_OBJECTIVES[algorithm]
    fn, args, devices = seeds_program(env_id, objective, objective.zero_meta(), config, num_seeds)
    ours, _ = _compile(fn, *args)
    keys = seed_keys(num_seeds)
    rejax_train = REJAX_PEERS[algorithm](env_id, config)
    rejax_fn = jax.jit(jax.vmap(rejax_train)) if num_seeds > 1 else jax.jit(rejax_train)
    peer_args = (keys,) if num_seeds > 1 else (keys[0],)
    programs = {"metadisco": (ours, args), "rejax": (_compile(rejax_fn, *peer_args)[0], peer_args)}
    if algorithm in PUREJAXRL_PEERS and _with_purejaxrl(config):
        train = PUREJAXRL_PEERS[algorithm](env_id, config)
        fn = jax.jit(jax.vmap(train)) if num_seeds > 1 else jax.jit(train)
        programs["purejaxrl"] = (_compile(fn, *peer_args)[0], peer_args)
    steps = num_seeds * config.num_updates * config.batch_size
    figure = {"env": env_id, "seeds": num_seeds, "timesteps_per_seed": config.num_updates * config.batch_size,
              "metadisco_devices": len(devices),
              **_measured(programs, num_seeds > 1, steps, repeats, config.num_updates)}
    return _network_only(env_id, config, num_seeds, devices, figure, repeats) if network_only else figure


def population_shape(shape: dict) -> tuple:
    """(meta-training config, its first task, that task's resolved train config) of a population `shape`."""
    from metadisco.meta.load import parse_config

    config = parse_config(shape)
    task = config.tasks[0]
    return config, task, resolve_config(task.env, task.preset, task.train, task.timesteps)


def population_figure(repeats: int, devices=None, shape: dict = QUICKSTART, network_only: bool = False) -> dict:
    """A meta-training generation in `shape` (a meta-training config: its first task, its population) against
    as many rejax PPO variants; with `network_only`, the network-only bound of as many runs beside them."""
    from metadisco.bench.meta import population_call
    from metadisco.parallel.sharding import make_mesh

    config, task, train_config = population_shape(shape)
    devices = jax.devices() if devices is None else devices
    (fn, args), steps, mesh = population_call(config, make_mesh(devices))
    ours, _ = _compile(fn, *args)
    population = config.strategy.population_size
    clip_eps = np.linspace(0.15, 0.25, population, dtype=np.float32)  # 16 PPO variants
    keys = np.broadcast_to(np.asarray(seed_keys(task.seeds)), (population, task.seeds, 2))
    programs = {"metadisco": (ours, args),
                "rejax": (_compile(jax.jit(peers.rejax_population(task.env, train_config)), clip_eps, keys)[0],
                          (clip_eps, keys))}
    if _with_purejaxrl(train_config):
        fn = jax.jit(purejaxrl.purejaxrl_population(task.env, train_config))
        programs["purejaxrl"] = (_compile(fn, clip_eps, keys)[0], (clip_eps, keys))
    drift = shape["objective"]["drift"]
    figure = {"env": task.env, "population": population, "seeds": task.seeds,
              "timesteps_per_run": train_config.num_updates * train_config.batch_size,
              "objective": f"{drift['kind']} (hidden {drift['hidden']})", "rejax_variants": "clip_eps 0.15 ... 0.25",
              "metadisco_devices": int(mesh.devices.size),
              **_measured(programs, True, steps, repeats, train_config.num_updates)}
    if not network_only:
        return figure
    return _network_only(task.env, train_config, population * task.seeds, list(mesh.devices.flat), figure, repeats)


def fresh_compile_seconds(config) -> dict:
    """`_compile`'s seconds for the one-seed program of `config`, traced and compiled from scratch: the program
    builder is memoised (`runs.seeds.runs_program`), and a second `lower().compile()` of the same jitted function
    would come from JAX's in-memory caches in a fraction of a millisecond (0.0003 s, measured)."""
    ppo = BUILTIN_OBJECTIVES["ppo"]
    runs_program.cache_clear()
    fn, args, _ = seeds_program(ENV, ppo, ppo.zero_meta(), config, 1)
    return _compile(fn, *args)[1]


def compile_figure(timesteps: int, repeats: int) -> dict:
    """Trace + compile seconds of the one-seed programs, alternating; fresh functions every time."""
    config = resolve_config(ENV, timesteps=timesteps)
    key = seed_keys(1)[0]
    samples = {"metadisco": [], "rejax": []}
    load = [_load()]
    for _ in range(repeats):
        samples["metadisco"].append(fresh_compile_seconds(config))
        samples["rejax"].append(_compile(jax.jit(peers.rejax_train(ENV, config)), key)[1])
    load.append(_load())
    med = {name: {k: statistics.median(run[k] for run in runs) for k in runs[0]} for name, runs in samples.items()}
    return {"metadisco_seconds": med["metadisco"]["seconds"], "rejax_seconds": med["rejax"]["seconds"],
            "ratio": med["metadisco"]["seconds"] / med["rejax"]["seconds"],
            "cpu_ratio": med["metadisco"]["cpu_seconds"] / med["rejax"]["cpu_seconds"],
            "medians": med, "samples": samples, "load": load}


def env_only_figure(timesteps: int, repeats: int) -> dict:
    config = resolve_config(ENV, timesteps=timesteps)
    key = seed_keys(1)[0]
    compiled, _ = _compile(jax.jit(env_only_fn(ENV, config)), key)
    steps = config.num_updates * config.batch_size
    samples = [steps / _run_seconds(compiled, key) for _ in range(repeats)]
    return {"env_steps_per_second": statistics.median(samples), "samples": samples}


# Figure groups: PPO on CartPole (seeds, population, compile, env only), PQN (seeds), PPO on MinAtar (seeds and
# population, with the network-only bound).
PEER_FIGURES = ("ppo", "pqn", "minatar")
DEFAULT_PEER_FIGURES = ("ppo", "pqn")  # MinAtar's group takes about 30 min on 2 cores: asked for by name


def _with_roofline(figure: dict, flops: dict, peak: dict | None) -> dict:
    """`figure` with the FLOPs per env step and, for each program, its FLOP/s and fraction of `peak`."""
    if peak is None:
        return figure
    from metadisco.bench.roofline import roofline

    per_step = flops["flops_per_env_step"]
    return {**figure, "flops": flops,
            **{f"{name}_roofline": roofline(per_step, figure[f"{name}_steps_per_second"], peak)
               for name in figure["samples"]}}


def bench_peers(timesteps: int = 262_144, repeats: int = 3, say=lambda message: None,
                figures: tuple[str, ...] = DEFAULT_PEER_FIGURES, peak: dict | None = None,
                keep=lambda partial: None) -> dict:
    """The figures of the groups in `figures` (default `DEFAULT_PEER_FIGURES`); `say` reports progress; with `peak`
    (`metadisco.bench.roofline.peak_flops`), FLOPs and the fraction of it for each throughput figure. `keep(out)`
    is called with the figures so far after each one, so that a run cut short (a lent machine's time limit) still
    leaves them."""
    from metadisco.bench.roofline import flops_per_env_step

    def flops(algorithm="ppo", objective=None, env_id=ENV):
        config = resolve_config(env_id, timesteps=timesteps, algorithm=algorithm)
        return flops_per_env_step(env_id, config, objective or BUILTIN_OBJECTIVES[algorithm]) if peak else {}

    def population_flops(shape):
        if not peak:
            return {}
        config, task, train_config = population_shape(shape)
        return flops_per_env_step(task.env, train_config, config.objective)

    out = {"env": ENV, "preset": "classic", "repeats": repeats, "load_before": _load()}
    head = {}
    if "ppo" in figures:
        say(f"peers: 1 seed x {timesteps} steps, alternating metadisco / rejax {repeats} times")
        ppo_flops = flops()
        out["seeds_1"] = _with_roofline(seeds_figure(1, timesteps, repeats), ppo_flops, peak)
        keep(out)
        say(f"peers: 16 seeds x {timesteps} steps")
        out["seeds_16"] = _with_roofline(seeds_figure(16, timesteps, repeats), ppo_flops, peak)
        keep(out)
        say("peers: a meta-training population in the quickstart's shape (16 members x 2 seeds x 16,384 steps)")
        out["population"] = _with_roofline(population_figure(repeats), population_flops(QUICKSTART), peak)
        keep(out)
        say("peers: compile seconds, 1 seed")
        out["compile"] = compile_figure(timesteps, max(2, repeats - 1))
        keep(out)
        say("peers: env only")
        out["env_only_seeds_1"] = env_only_figure(timesteps, repeats)
        keep(out)
        head.update({
            "seeds_1_ratio": out["seeds_1"]["ratio"], "seeds_16_ratio": out["seeds_16"]["ratio"],
            "population_ratio": out["population"]["ratio"], "compile_ratio": out["compile"]["ratio"],
            **{f"{name}_purejaxrl_ratio": out[name].get("purejaxrl_ratio")
               for name in ("seeds_1", "seeds_16", "population") if "purejaxrl" in out[name]["ops"]},
            "ops": {name: out[name]["ops"] for name in ("seeds_1", "seeds_16", "population")},
            "targets": {"seeds_1_ratio": ">= 1.0", "seeds_16_ratio": ">= 1.5", "population_ratio": ">= 1.5",
                        "compile_ratio": "<= 1.2"}})
    if "pqn" in figures:
        say(f"peers: PQN, 1 and 16 seeds x {timesteps} steps (pqn_classic: 32 envs x 64 steps, 2 x 256 LayerNorm)")
        pqn_flops = flops("pqn")
        out["pqn_seeds_1"] = _with_roofline(seeds_figure(1, timesteps, repeats, "pqn"), pqn_flops, peak)
        keep(out)
        out["pqn_seeds_16"] = _with_roofline(seeds_figure(16, timesteps, repeats, "pqn"), pqn_flops, peak)
        keep(out)
        head.update({"pqn_seeds_1_ratio": out["pqn_seeds_1"]["ratio"],
                     "pqn_seeds_16_ratio": out["pqn_seeds_16"]["ratio"]})
    if "minatar" in figures:
        say(f"peers: {MINATAR_ENV}, 1 and 16 seeds x {timesteps} steps (minatar preset), with the network alone")
        minatar_flops = flops(env_id=MINATAR_ENV)
        for n in (1, 16):
            out[f"minatar_seeds_{n}"] = _with_roofline(
                seeds_figure(n, timesteps, repeats, env_id=MINATAR_ENV, network_only=True), minatar_flops, peak)
            keep(out)
        say("peers: a meta-training population in short_long_minatar's shape (16 members x 156,250 Breakout steps, "
            "TA-LPO), with the network alone")
        out["minatar_population"] = _with_roofline(
            population_figure(repeats, shape=SHORT_LONG_MINATAR, network_only=True),
            population_flops(SHORT_LONG_MINATAR), peak)
        keep(out)
        head.update({f"minatar_{name}_ratio": out[f"minatar_{name}"]["ratio"]
                     for name in ("seeds_1", "seeds_16", "population")})
    out["load_after"] = _load()
    out["headline"] = head
    return out
