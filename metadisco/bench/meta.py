"""Meta-training benchmarks (`metadisco bench --meta`): ES overhead per generation, population throughput.

- overhead: a short LPO-on-CartPole run with every generation logged and checkpointed; the share of a
  generation that is not training the members (ask, tell, keys, fitness, metrics line, objective file,
  checkpoint, progress), over the generations after the first. Target: <= 1%.
- throughput: env steps per second of the compiled population program (members x seeds x trainer) for
  populations 1, 4, 16, 64 on CartPole, compile time apart (best of two runs).
- generations (`--recipes`): a real recipe's training generations against its scoring generations (those that
  also train the ES mean on fresh seeds and validate), the recipe run as written but for fewer generations and a
  shorter scoring period (`generation_seconds`). Each generation's seconds come with the seconds JAX spent in it
  lowering and compiling programs (its monitoring events), so that warm figures (seconds less compiling) compare
  generations that met a task for the first time with those that did not.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import jax
import numpy as np

from metadisco.meta.load import parse_config
from metadisco.meta.loop import meta_train
from metadisco.meta.step import GenerationStep
from metadisco.parallel import hosts
from metadisco.parallel.sharding import make_mesh

POPULATIONS = (1, 4, 16, 64)


def bench_config(population: int, timesteps: int, generations: int, strategy: str = "Open_ES") -> dict:
    return {
        "objective": {"drift": {"kind": "lpo", "hidden": 32}},
        "tasks": [{"env": "CartPole-v1", "timesteps": timesteps, "seeds": 1}],
        "strategy": {"name": strategy, "population_size": population, "sigma_init": 0.03,
                     **({"lr": 0.03} if strategy == "Open_ES" else {})},
        "generations": generations, "eval_every": 10_000, "held_out_envs": [],
    }


def _mesh_for(population: int):
    """The largest device set that divides the population (all devices when it divides)."""
    devices = jax.devices()
    n = max(k for k in range(1, len(devices) + 1) if population % k == 0)
    return make_mesh(devices[:n])


def es_overhead(population: int = 16, timesteps: int = 16_384, generations: int = 6) -> dict:
    config = parse_config(bench_config(population, timesteps, generations))
    with tempfile.TemporaryDirectory() as out:
        result = meta_train(config, out, mesh=_mesh_for(population), progress=False)
    t = result.timing
    skip = 1
    gens = len(t.generation) - skip
    work = np.asarray(t.generation[skip:]) - np.asarray(t.mean_eval[skip:])
    return {"population": population, "timesteps_per_member": timesteps, "generations_timed": gens,
            "seconds_per_generation": float(np.mean(work)),
            "es_seconds_per_generation": float(np.mean(t.es[skip:])),
            "io_seconds_per_generation": float(np.mean(t.io[skip:])),
            "overhead_fraction": t.overhead_fraction(skip)}


def population_call(config, mesh):
    """((population program, (population, keys)), env steps, mesh) of generation 0's first task: the program
    a meta-training generation runs, uncompiled."""
    step = GenerationStep(config, mesh)
    es_state = step.init(step.base_key)
    population_tree, _ = step.ask(step.base_key, es_state)
    task = step.problem.tasks[0]
    keys = hosts.to_global(step.keys(0).tasks[0], step.mesh)
    steps = config.strategy.population_size * task.cfg.seeds * task.steps_per_run
    hypers = hosts.to_global(task.hypers(config.strategy.population_size), step.mesh)
    return (task.population_program, (population_tree, keys, hypers)), steps, step.mesh


def population_throughput(populations=POPULATIONS, timesteps: int = 16_384) -> dict:
    out = {}
    for population in populations:
        strategy = "Open_ES" if population % 2 == 0 else "SimpleGA"
        config = parse_config(bench_config(population, timesteps, 1, strategy))
        (program, args), steps, mesh = population_call(config, _mesh_for(population))
        start = time.perf_counter()
        compiled = program.lower(*args).compile()
        compile_s = time.perf_counter() - start
        best = float("inf")
        for _ in range(2):
            start = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            best = min(best, time.perf_counter() - start)
        out[f"population_{population}"] = {"env_steps_per_second": steps / best, "seconds": best,
                                           "compile_seconds": compile_s, "devices": mesh.devices.size}
    return out


class ResidentMemory:
    """A meta-training callback: this process's resident memory (bytes, from /proc) after each generation."""

    def __init__(self):
        self.bytes: list[int] = []

    def on_generation(self, line: dict, seconds) -> None:
        with open("/proc/self/statm") as f:
            self.bytes.append(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE"))


def memory_over_generations(generations: int = 300, early: int = 30, timesteps: int = 512) -> dict:
    """Resident memory after generation `early` and after the last of a tiny run written to a run directory
    (metrics, objective and checkpoint every generation, the ES mean scored every 10): a long run's footprint
    stays flat when every generation frees what it made. Aim: within 10%."""
    config = bench_config(4, timesteps, generations)
    config["tasks"][0]["train"] = {"num_envs": 4, "num_steps": 16, "hidden_sizes": [8, 8], "num_minibatches": 2,
                                   "update_epochs": 2}
    config["eval_every"] = 10
    memory = ResidentMemory()
    with tempfile.TemporaryDirectory() as out:
        meta_train(parse_config(config), out, mesh=_mesh_for(4), progress=False, callbacks=[memory], plot=False)
    at_early, at_end = memory.bytes[early - 1], memory.bytes[-1]
    return {"generations": generations, "timesteps_per_member": timesteps,
            f"rss_bytes_after_generation_{early}": at_early, f"rss_bytes_after_generation_{generations}": at_end,
            "growth_fraction": (at_end - at_early) / at_early, "aim": "growth_fraction <= 0.10",
            "rss_bytes_every_10_generations": memory.bytes[9::10]}


# Lowering and compiling; tracing is left out, as its events nest (an inner jit's trace inside an outer one's).
COMPILE_EVENTS = ("/jax/core/compile/jaxpr_to_mlir_module_duration", "/jax/core/compile/backend_compile_duration")


class GenerationLog:
    """A meta-training callback: per generation, its seconds, its scoring hooks' seconds and the seconds JAX spent
    lowering and compiling programs during it. `close()` stops listening."""

    def __init__(self, say=lambda message: None):
        self.rows: list[dict] = []
        self.say = say
        self._compile = 0.0
        jax.monitoring.register_event_duration_secs_listener(self._on_event)

    def _on_event(self, event: str, duration_secs: float, **_) -> None:
        if event in COMPILE_EVENTS:
            self._compile += duration_secs

    def on_start(self, start: int, generations: int) -> None:
        self._compile = 0.0  # what compiled before generation 0 (baselines, the initial mean) is start time

    def on_generation(self, line: dict, seconds) -> None:
        scoring = line.get("scoring_seconds", {})
        self.rows.append({"generation": line["generation"], "kind": "scoring" if scoring else "training",
                          "seconds": seconds.generation, "compile_seconds": self._compile,
                          "warm_seconds": seconds.generation - self._compile, "scoring_seconds": scoring})
        self.say(f"  generation {line['generation']} ({self.rows[-1]['kind']}): {seconds.generation:.1f} s, of which "
                 f"compiling {self._compile:.1f} s")
        self._compile = 0.0

    def close(self) -> None:
        jax.monitoring.unregister_event_duration_listener(self._on_event)


def generation_seconds(config, every: int = 3, scorings: int = 2, say=lambda message: None) -> dict:
    """Seconds of `config`'s training and scoring generations: the recipe as written (tasks, population, ES,
    validation) run for `every` x `scorings` generations, the ES mean scored and validated every `every`, in
    memory (nothing written). Medians of each kind's warm seconds (less lowering and compiling), their ratio, and
    every generation's row; `start_seconds` is what came before generation 0 (baselines, the initial mean's
    fitness and validation). `say` reports each generation as it ends."""
    overrides = [f"generations={every * scorings}", f"eval_every={every}", "checkpoint_every=1000000"]
    if config.validation.tasks:
        overrides.append(f"validation.every={every}")
    config = parse_config(config.to_dict(), overrides)
    log = GenerationLog(say)
    try:
        start = time.perf_counter()
        meta_train(config, None, progress=False, callbacks=[log], plot=False)
        total = time.perf_counter() - start
    finally:
        log.close()
    kinds = {kind: [r for r in log.rows if r["kind"] == kind] for kind in ("training", "scoring")}
    medians = {kind: statistics.median(r["warm_seconds"] for r in rows) for kind, rows in kinds.items()}
    return {"generations": len(log.rows), "score_every": every,
            "validation_tasks": [t.env for t in config.validation.tasks],
            "warm_seconds_per_training_generation": medians["training"],
            "warm_seconds_per_scoring_generation": medians["scoring"],
            "scoring_over_training": medians["scoring"] / medians["training"],
            "start_seconds": total - sum(r["seconds"] for r in log.rows), "total_seconds": total,
            "rows": log.rows}


def bench_meta(populations=POPULATIONS, timesteps: int = 16_384) -> dict:
    return {"env": "CartPole-v1", "objective": "lpo (hidden 32)", "timesteps_per_member": timesteps,
            "throughput": population_throughput(populations, timesteps),
            "es_overhead": es_overhead(16, timesteps),
            "memory_over_generations": memory_over_generations()}


def tuned_generation_cost(config, repeats: int = 3, say=lambda message: None) -> dict:
    """A tuned-fitness recipe's training generation against the same recipe without its grid (`fitness.tune`
    dropped: each member at the task's own settings), alternating untuned and tuned `repeats` times after one
    warm-up generation of each (compiling), on generations 1, 2, ...: medians and their ratio. On the CPU the
    grid costs about its size (the work is rows x steps); on a GPU far less, while kernel launches bound it."""
    from dataclasses import replace

    from metadisco.meta.baselines import measure_baselines
    from metadisco.meta.config import FitnessConfig

    if not config.fitness.tune:
        raise ValueError("the recipe has no fitness.tune grid to measure")
    configs = {"untuned": replace(config, fitness=FitnessConfig(score=config.fitness.score)), "tuned": config}
    steps = {name: GenerationStep(c) for name, c in configs.items()}
    baselines = {name: measure_baselines(step.problem) for name, step in steps.items()}
    states = {name: step.init() for name, step in steps.items()}
    seconds: dict[str, list[float]] = {name: [] for name in steps}
    for g in range(repeats + 1):
        for name, step in steps.items():
            start = time.perf_counter()
            states[name], _ = step(states[name], g, baselines[name])
            if g:  # generation 0 compiles
                seconds[name].append(time.perf_counter() - start)
            say(f"  generation {g} {name}: {time.perf_counter() - start:.1f} s")
    medians = {name: statistics.median(s) for name, s in seconds.items()}
    grid = steps["tuned"].problem.grid
    return {"grid": grid.labels(), "grid_size": grid.size, "seconds": seconds,
            "median_untuned": medians["untuned"], "median_tuned": medians["tuned"],
            "tuned_over_untuned": medians["tuned"] / medians["untuned"], "devices": steps["tuned"].devices}
