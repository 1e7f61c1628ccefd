"""The outer loop: ask -> train every member on every task -> fitness -> tell, with logs and checkpoints.

One generation, with P members, T tasks and S seeds per member and task:

    population = ask(key_g, es_state)                       # meta-param pytree, leaves [P, ...]
    for each task t (tasks of different shapes run one after another, one compiled program each):
        returns_t = evaluate_t(population, keys_t)         # [P, S]; members sharded over the device mesh
    fitness = mean over tasks of (mean over seeds of returns_t) / |baseline_t|    # [P], higher is better
    es_state = tell(key_g, population, to_minimise(fitness), es_state)

All members of a generation train with the same S keys (common random numbers: antithetic pairs differ only
in their perturbation). A member with a non-finite return on any seed (diverged) gets NaN fitness, which
`to_minimise` makes the worst; it is counted in `nan_count`.

Every key derives from (config.seed, generation), so a run resumed from a checkpoint repeats exactly what the
uninterrupted run would have done. The ES mean is evaluated on fresh seeds (a key stream training never uses,
the same at every evaluation, so evaluations are paired) on P x S runs per task, reusing the compiled
population evaluator with the mean copied P times.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.errors import UserError
from metadisco.fitness import ppo_gap, reduce_fitness, to_minimise
from metadisco.io import atomic_write_bytes, atomic_write_text, read_yaml, to_jsonable
from metadisco.meta import checkpoint as ckpt_lib
from metadisco.meta import distributed as dist
from metadisco.meta import paired
from metadisco.meta.config import MetaConfig, parse_config
from metadisco.meta.start import start_point
from metadisco.meta.strategy import Strategy, make_strategy
from metadisco.meta.tasks import _EVALUATORS, Task, build_tasks, make_evaluator, sample_tasks  # noqa: F401
from metadisco.objectives import BUILTIN_OBJECTIVES

EVAL_STREAM = 0x7FFFFFFF  # fold_in tags of key streams that generations (0, 1, ...) never reach
START_STREAM = 0x7FFFFFFE
INIT_STREAM = 0x7FFFFFFD
VALIDATION_STREAM = 0x7FFFFFFC
REFERENCE_STREAM = 0x7FFFFFFB
BEST_OBJECTIVE = "objective_best.msgpack"


# ---------------------------------------------------------------------------------------------------------
# fitness


def member_fitness(returns: np.ndarray) -> np.ndarray:
    """[P, S] returns -> [P]: mean over seeds, NaN when any seed is not finite (diverged)."""
    returns = np.asarray(returns, np.float64)
    ok = np.all(np.isfinite(returns), axis=-1)
    return np.where(ok, np.mean(np.where(np.isfinite(returns), returns, 0.0), axis=-1), np.nan)


def combine(per_task: list[np.ndarray], normalisers: list[float | None]) -> np.ndarray:
    """Mean over tasks of each task's fitness divided by the size of its normaliser (when it has one): [P].

    Dividing by |baseline| keeps the order of members on envs whose returns are negative (Acrobot, Pendulum),
    where dividing by the baseline itself would rank the worst member first."""
    scaled = [f / abs(n) if n else f for f, n in zip(per_task, normalisers, strict=True)]
    return np.mean(np.stack(scaled), axis=0)


def summarise(fitness: np.ndarray) -> dict:
    finite = fitness[np.isfinite(fitness)]
    stats = {"fitness_mean": None, "fitness_max": None, "fitness_min": None, "fitness_std": None}
    if finite.size:
        stats = {"fitness_mean": float(finite.mean()), "fitness_max": float(finite.max()),
                 "fitness_min": float(finite.min()), "fitness_std": float(finite.std())}
    return {**stats, "nan_count": int(fitness.size - finite.size)}


# ---------------------------------------------------------------------------------------------------------
# the run


def _strong(tree):
    """Drop JAX's weak types (Python scalars inside the strategy) so state signatures never change."""
    return jax.tree.map(lambda x: jax.lax.convert_element_type(x, jnp.result_type(x)), tree)


@dataclass
class Timing:
    """Per-generation seconds, for the benchmark's ES-overhead figure."""

    generation: list[float] = field(default_factory=list)  # the whole generation
    evaluate: list[float] = field(default_factory=list)  # training the members (the work itself)
    mean_eval: list[float] = field(default_factory=list)  # training the ES mean on fresh seeds (when due)
    es: list[float] = field(default_factory=list)  # ask + tell
    io: list[float] = field(default_factory=list)  # metrics line, objective file, checkpoint, progress bar

    def overhead_fraction(self, skip: int = 1) -> float:
        """Share of a generation that is not training (ES, keys, fitness, logging, checkpoint), from the
        generations after the first `skip`; mean evaluations are work, not overhead, and are left out."""
        gen, work, mean = (np.asarray(x[skip:]) for x in (self.generation, self.evaluate, self.mean_eval))
        return float(np.sum(gen - work - mean) / np.sum(gen - mean))


@dataclass
class RunResult:
    generations_done: int
    fitness_of_initial_mean: float | None
    fitness_of_final_mean: float | None
    mean: Any  # the final ES mean (host numpy pytree)
    timing: Timing
    best_generation: int | None = None  # with validation: the generation of the kept objective
    best_validation: float | None = None  # its PPO-normalised validation score
    fitness_of_best: float | None = None  # its PPO-normalised fitness on fresh seeds of the training tasks


class MetaRun:
    """One meta-training run into `out` (None: nothing written, e.g. in benchmarks)."""

    def __init__(self, config: MetaConfig, out: str | Path | None, resume: bool = False, mesh=None,
                 progress: bool = True):
        self.config = config
        self.out = Path(out) if out is not None else None
        self.resume = resume
        self.writer = dist.is_writer() and self.out is not None
        self.progress = progress and dist.is_writer()
        self.objective = config.objective
        self.paired = config.normalise == "paired"
        self.base_key = np.asarray(jax.random.PRNGKey(config.seed))
        start = start_point(self.objective, config.start, jax.random.fold_in(self.base_key, START_STREAM),
                            config.start_scale)
        self.strategy: Strategy = make_strategy(config.strategy, start)
        self.mesh = mesh if mesh is not None else dist.make_mesh()
        dist.check_population(config.strategy.population_size, self.mesh)
        self.config_yaml = config.to_yaml()
        self.digest = ckpt_lib.config_digest(self.config_yaml)
        self.timing = Timing()
        self._compile()

    # -- compiled pieces ------------------------------------------------------------------------------

    def _compile(self) -> None:
        strategy, rep = self.strategy, dist.replicated(self.mesh)
        P = self.config.strategy.population_size
        # States leave init and tell strongly typed, as a state read back from a checkpoint is: one compiled
        # ask / tell serves a fresh and a resumed run alike.
        self._init = jax.jit(lambda key: _strong(strategy.init(key)), out_shardings=rep)
        self._ask = jax.jit(strategy.ask, out_shardings=rep)
        # The sign is fixed in fitness.to_minimise, applied here and nowhere else.
        self._tell = jax.jit(
            lambda key, pop, fitness, state: _strong(strategy.tell(key, pop, to_minimise(fitness), state)),
            out_shardings=rep)
        self._mean = jax.jit(strategy.mean, out_shardings=rep)
        self._tile = jax.jit(lambda mean: jax.tree.map(lambda x: jnp.broadcast_to(x, (P, *x.shape)), mean),
                             out_shardings=rep)
        self.task_lengths = build_tasks(self.config.tasks, self.objective, self.config.fitness, self.mesh)
        self.tasks: list[Task] = [t for lengths in self.task_lengths for t in lengths]  # every (env, length)
        self.valid_tasks: list[Task] = [t for lengths in build_tasks(
            self.config.validation.tasks, self.objective, self.config.fitness, self.mesh, "validation.tasks")
            for t in lengths]
        # PPO on the same seed keys: every learned piece at zero is the handcrafted baseline exactly.
        self.control = self.objective.zero_meta()

    # -- keys -----------------------------------------------------------------------------------------

    def generation_tasks(self, generation: int) -> list[Task]:
        """The tasks (env and training length) generation `generation` trains on."""
        key = jax.random.fold_in(self.base_key, generation)
        return sample_tasks(key, self.task_lengths, self.config.sampling.tasks_per_generation)

    def _generation_keys(self, generation: int):
        """(ask key, tell key, [per task of `generation_tasks`: keys [P, S, 2]]): members share their seeds'
        keys; a config task's seeds do not depend on which length it is drawn at."""
        P = self.config.strategy.population_size
        key = jax.random.fold_in(self.base_key, generation)
        ask_key, tell_key, train_key = jax.random.split(key, 3)
        task_keys = []
        for task in self.generation_tasks(generation):
            seeds = jax.random.split(jax.random.fold_in(train_key, task.index), task.cfg.seeds)
            task_keys.append(np.broadcast_to(np.asarray(seeds), (P, *seeds.shape)))
        return np.asarray(ask_key), np.asarray(tell_key), task_keys

    def _eval_keys(self):
        """Fresh seeds for the ES mean: [P, S, 2] per task, from a stream training never uses."""
        P = self.config.strategy.population_size
        stream = jax.random.fold_in(self.base_key, EVAL_STREAM)
        out = []
        for t, task in enumerate(self.tasks):
            keys = jax.random.split(jax.random.fold_in(stream, t), P * task.cfg.seeds)
            out.append(np.asarray(keys).reshape(P, task.cfg.seeds, -1))
        return out

    # -- evaluation -----------------------------------------------------------------------------------

    def _evaluate(self, population, task_keys, tasks: list[Task] | None = None
                  ) -> tuple[list[np.ndarray], np.ndarray]:
        """Train the population on `tasks` (default: every task): ([P, S] returns per task, fitness [P]).

        Paired normalisation trains PPO on the same seed keys in the same call (extra rows of the population)
        and scores each member by `ppo_normalised` per task; `self.last_ppo` keeps PPO's score per task."""
        tasks = self.tasks if tasks is None else tasks
        if not self.paired:
            returns = [dist.to_host(task.evaluate(population, dist.to_global(keys, self.mesh)))
                       for task, keys in zip(tasks, task_keys, strict=True)]
            return returns, combine([member_fitness(r) for r in returns], self.normalisers)
        P = self.config.strategy.population_size
        rows = paired.with_control(dist.to_host(population), self.control, self.mesh.devices.size)
        rows = dist.to_global(rows, self.mesh)
        returns, scores, controls = [], [], []
        for task, keys in zip(tasks, task_keys, strict=True):
            out = dist.to_host(task.evaluate(rows, dist.to_global(paired.rows_of(keys[0], paired.count(rows)),
                                                                  self.mesh)))
            ppo = member_fitness(out[P:P + 1])[0]
            controls.append(ppo)
            returns.append(out[:P])
            scores.append(paired.relative(member_fitness(out[:P]), ppo, self.scales[task.name]))
        self.last_ppo = {t.name: float(c) for t, c in zip(tasks, controls, strict=True)}
        return returns, paired.combine_tasks(scores, controls)

    def score_paired(self, meta, tasks: list[Task], keys_of, min_rows: int = 0) -> tuple[float | None, dict]:
        """PPO-normalised score of one objective `meta` against PPO on the same keys: each task's rows are
        (meta, PPO) pairs, pair j on seeds `keys_of(task)[j]`, padded to `min_rows` (the population's row count
        reuses the population's compiled program); (mean over tasks, {task name: score})."""
        per_task = {}
        for task in tasks:
            keys = keys_of(task)  # [pairs, S, 2]
            rows, n = paired.pairs(meta, self.control, keys.shape[0], self.mesh.devices.size, min_rows)
            row_keys = paired.pair_keys(keys, n)
            out = dist.to_host(task.evaluate(dist.to_global(rows, self.mesh), dist.to_global(row_keys, self.mesh)))
            half = keys.shape[0]
            mine, ppo = paired.run_mean(out[:half]), paired.run_mean(out[half:2 * half])
            scale = self.scales.get(task.name) or float(ppo_gap(ppo, self.random_returns[task.cfg.env]))
            per_task[task.name] = float(paired.relative(np.asarray([mine]), ppo, scale)[0])
        values = np.asarray(list(per_task.values()))
        value = float(np.mean(values)) if values.size and np.all(np.isfinite(values)) else None
        return value, per_task

    def _measure_scales(self, cached: dict[str, float]) -> dict[str, float]:
        """Per training task (env and length): `ppo_gap(PPO, random)`, PPO trained on every row of the
        population program with distinct reference seeds; from `cached` (a checkpoint) when there."""
        out = {}
        rows = self._population_rows()
        for task in self.tasks:
            if task.name in cached:
                out[task.name] = float(cached[task.name])
                continue
            self._say(f"measuring PPO's reference score on {task.name} ({rows} x {task.cfg.seeds} runs)")
            stream = jax.random.fold_in(jax.random.fold_in(self.base_key, REFERENCE_STREAM), task.index)
            keys = np.asarray(jax.random.split(jax.random.fold_in(stream, task.timesteps), rows * task.cfg.seeds))
            population = paired.pairs(self.control, self.control, 0, self.mesh.devices.size, rows)[0]
            out_rows = dist.to_host(task.evaluate(dist.to_global(population, self.mesh),
                                                  dist.to_global(keys.reshape(rows, task.cfg.seeds, -1), self.mesh)))
            ppo = paired.run_mean(out_rows)
            if not np.isfinite(ppo):
                raise UserError(f"PPO finishes no episode in the fitness window of {task.name}; train longer "
                                "(timesteps) or widen final_window")
            out[task.name] = float(ppo_gap(ppo, self.random_returns[task.cfg.env]))
        return out

    def _measure_random(self) -> dict[str, float]:
        """Return of a uniformly random policy on every training and validation env (paired normalisation's
        zero point); deterministic, so it is measured again rather than stored in checkpoints."""
        from metadisco.evaluate.runner import random_policy_return

        out = {}
        for task in self.tasks + self.valid_tasks:
            env = task.cfg.env
            if env not in out:
                value = random_policy_return(env, seed=self.config.seed)
                out[env] = value if np.isfinite(value) else 0.0  # no episode ends at random: 0 is the zero point
        return out

    def _population_rows(self) -> int:
        return paired.count_rows(self.config.strategy.population_size, self.mesh.devices.size)

    def _fresh_keys(self, task: Task) -> np.ndarray:
        """Fresh seeds of a training task, [pairs, S, 2]: as many (meta, PPO) pairs as the population's
        rows hold, from a stream training never uses, the same at every evaluation (so evaluations pair)."""
        pairs = self._population_rows() // 2
        stream = jax.random.fold_in(jax.random.fold_in(self.base_key, EVAL_STREAM), task.index)
        stream = jax.random.fold_in(stream, task.timesteps)
        return np.asarray(jax.random.split(stream, pairs * task.cfg.seeds)).reshape(pairs, task.cfg.seeds, -1)

    def _validation_keys(self, task: Task) -> np.ndarray:
        """The fixed validation seeds of a validation task: [1, S, 2] (one pair)."""
        stream = jax.random.fold_in(jax.random.fold_in(self.base_key, VALIDATION_STREAM), task.index)
        return np.asarray(jax.random.split(stream, task.cfg.seeds))[None]

    def validate(self, es_state) -> tuple[float | None, dict]:
        """The ES mean's PPO-normalised score on the validation tasks (every length of each)."""
        return self.score_paired(dist.to_host(self._mean(es_state)), self.valid_tasks, self._validation_keys)

    def evaluate_mean(self, es_state) -> float | None:
        """Fitness (higher is better) of the ES mean over P x S fresh seeds per task (paired: PPO-normalised on
        fresh seeds of every task at every length); None if all diverged."""
        if self.paired:
            return self.score_paired(dist.to_host(self._mean(es_state)), self.tasks, self._fresh_keys,
                                     self._population_rows())[0]
        population = self._tile(self._mean(es_state))
        returns = [dist.to_host(task.evaluate(population, dist.to_global(keys, self.mesh)))
                   for task, keys in zip(self.tasks, self._eval_keys(), strict=True)]
        # Every run counts as one seed of one member: average the finite runs of each task.
        per_task = [np.nanmean(np.where(np.isfinite(r), r, np.nan)) if np.isfinite(r).any() else np.nan
                    for r in returns]
        value = combine([np.asarray([v]) for v in per_task], self.normalisers)[0]
        return float(value) if np.isfinite(value) else None

    # -- normalisers ----------------------------------------------------------------------------------

    def _measure_normalisers(self, cached: dict[str, float]) -> dict[str, float]:
        """Baseline returns per task env when fitness needs normalising (several tasks, or any baseline set):
        from the config, else the cache, else measured once by training PPO."""
        from metadisco.runs import train_seeds

        cfgs = self.config.tasks
        if self.paired or (len(cfgs) == 1 and cfgs[0].baseline is None):
            return {}
        out = {}
        for task in self.tasks:
            env = task.cfg.env
            if env in out:  # measured at its first training length
                continue
            if task.cfg.baseline is not None:
                out[env] = float(task.cfg.baseline)
            elif env in cached:
                out[env] = float(cached[env])
            else:
                self._say(f"measuring the PPO baseline on {env} ({self.config.baseline_seeds} seeds)")
                ppo = BUILTIN_OBJECTIVES["ppo"]
                result = train_seeds(env, ppo, ppo.zero_meta(), task.train_config, self.config.baseline_seeds,
                                     self.config.seed)
                values = np.asarray(reduce_fitness(self.config.fitness, result.metrics,
                                                   task.train_config.final_window))
                value = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
                if not np.isfinite(value) or value == 0:
                    raise UserError(f"the PPO baseline on {env} is {value}; give tasks.*.baseline in the config")
                out[env] = value
        return out

    # -- files ----------------------------------------------------------------------------------------

    def _say(self, message: str) -> None:
        if self.progress:
            sys.stderr.write(message + "\n")
            sys.stderr.flush()

    def _prepare_dir(self) -> ckpt_lib.Checkpoint | None:
        """Check the run directory; return the checkpoint to resume from, if any."""
        if self.out is None:
            return None
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"--out {str(self.out)!r} is a file; give a directory")
        if not self.resume:
            if self.writer and self.out.is_dir() and any(self.out.iterdir()):
                raise UserError(f"{self.out} is not empty; pass --resume to continue the run there, "
                                "or choose a new --out")
            return None
        ckpt = ckpt_lib.latest(self.out / "checkpoints")
        saved = self.out / "config.yaml"
        if ckpt is None:  # killed before the first checkpoint: start again, if it is the same run
            if saved.is_file() and ckpt_lib.config_digest(saved.read_text()) != self.digest:
                raise UserError(f"the config differs from the one of the run in {self.out}")
            self._say(f"no checkpoint in {self.out / 'checkpoints'} yet: starting from generation 0")
            return None
        if ckpt.config_sha256 != self.digest:
            # The one change a resume allows: more (or fewer) generations.
            old = read_yaml(saved) if saved.is_file() else None
            new = self.config.to_dict()
            if old is None or {**old, "generations": None} != {**new, "generations": None}:
                raise UserError(f"the config differs from the one of the run in {self.out}; resume with the same "
                                "config (only generations may change)")
        dist.warn_if_other_devices(self.out, self.mesh)
        return ckpt

    def _write_objective(self, mean_host) -> None:
        from metadisco.objectives.files import save_objective

        save_objective(self.out / "objective.msgpack", self.objective, mean_host)

    def _append_metrics(self, line: dict) -> None:
        with open(self.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(to_jsonable(line)) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _truncate_metrics(self, lines: int) -> None:
        """Keep the first `lines` lines (those the checkpoint accounts for): a resumed run rewrites the rest.

        A line without its newline was cut off mid-write (a torn file): it is dropped and said, never kept
        for the next record to be appended onto. If the torn line was one the checkpoint counts, its record
        is lost; a placeholder with null figures and `"lost": true` keeps one line per generation."""
        from metadisco.io import read_text

        path = self.out / "metrics.jsonl"
        text = read_text(path, "metrics file") if path.exists() else ""
        kept = text.splitlines(keepends=True)
        if kept and not kept[-1].endswith("\n"):
            torn = kept.pop()
            lost = len(kept) < lines
            self._say(f"{path}: dropped a partial last line ({len(torn.encode())} bytes, cut off mid-write)"
                      + (f"; the record of generation {len(kept)} is lost, a placeholder stands in" if lost else ""))
            if lost:
                kept.append(json.dumps({"generation": len(kept), "fitness_mean": None, "fitness_max": None,
                                        "seconds": None, "lost": True}) + "\n")
        kept = kept[:lines]
        if len(kept) < lines:
            raise UserError(f"{path} has {len(kept)} lines but the checkpoint counts {lines}; it was damaged")
        atomic_write_text(path, "".join(kept))

    # -- main loop ------------------------------------------------------------------------------------

    def run(self) -> RunResult:
        config, P = self.config, self.config.strategy.population_size
        ckpt = self._prepare_dir()
        init_state = self._init(dist.to_global(jax.random.fold_in(self.base_key, INIT_STREAM), self.mesh))
        if ckpt is not None:
            if not np.array_equal(ckpt.key, self.base_key):
                raise UserError(f"the checkpoint in {self.out} was made with another seed")
            host = ckpt_lib.restore_state(dist.to_host(init_state), ckpt)
            es_state = dist.to_global(host, self.mesh)
            start, env_steps, extra = ckpt.generation, ckpt.env_steps, dict(ckpt.extra)
            self.normalisers_by_env = self._measure_normalisers(ckpt.normalisers)
            if self.writer:
                self._truncate_metrics(ckpt.metrics_lines)
        else:
            es_state, start, env_steps, extra = init_state, 0, 0, {}
            if self.writer:
                self.out.mkdir(parents=True, exist_ok=True)
                (self.out / "checkpoints").mkdir(exist_ok=True)
                if (self.out / "metrics.jsonl").exists():  # a resume that found no checkpoint starts afresh
                    self._truncate_metrics(0)
            cached = {}
            self.normalisers_by_env = self._measure_normalisers(cached)
        self.normalisers = [self.normalisers_by_env.get(t.cfg.env) for t in self.tasks]
        self.scales: dict[str, float] = {}
        if self.paired:
            self.random_returns = self._measure_random()
            self.scales = self._measure_scales(ckpt.normalisers if ckpt is not None else {})
        if self.writer:
            atomic_write_text(self.out / "config.yaml", self.config_yaml)
            dist.record_devices(self.out, self.mesh)
            if self.normalisers_by_env or self.paired:
                baselines = ({"random_policy": self.random_returns, "ppo_gap": self.scales} if self.paired
                             else self.normalisers_by_env)
                atomic_write_text(self.out / "baselines.json", json.dumps(baselines, indent=2) + "\n")

        if start == 0 and "fitness_of_initial_mean" not in extra and config.generations > 0:
            self._say("evaluating the initial objective on fresh seeds (compiling first)")
            extra["fitness_of_initial_mean"] = self.evaluate_mean(es_state)
        if start == 0 and self.valid_tasks and "best_generation" not in extra:
            self._say("validating the initial objective")
            extra["validation_of_initial_mean"] = self.validate(es_state)[0]
            self._keep_if_best(es_state, 0, extra, extra["validation_of_initial_mean"])
        if self.writer and ckpt is None:
            self._write_objective(dist.to_host(self._mean(es_state)))
            self._checkpoint(es_state, 0, env_steps, extra, metrics_lines=0)

        final = extra.get("fitness_of_final_mean") if start >= config.generations else None
        bar = self._progress_bar(start)
        for g in range(start, config.generations):
            t0 = time.perf_counter()
            ask_key, tell_key, task_keys = self._generation_keys(g)
            tasks = self.generation_tasks(g)
            population, es_state = self._ask(dist.to_global(ask_key, self.mesh), es_state)
            jax.block_until_ready(population)
            t_ask = time.perf_counter() - t0
            t_eval = time.perf_counter()
            returns, fitness = self._evaluate(population, task_keys, tasks)
            t1 = time.perf_counter()
            t_eval = t1 - t_eval
            es_state = self._tell(dist.to_global(tell_key, self.mesh), population,
                                  dist.to_global(fitness.astype(np.float32), self.mesh), es_state)
            jax.block_until_ready(es_state)
            t_tell = time.perf_counter() - t1
            rows = paired.count_rows(P, self.mesh.devices.size) if self.paired else P
            env_steps += sum(rows * t.cfg.seeds * t.steps_per_run for t in tasks)
            line = {"generation": g, **summarise(fitness),
                    "returns": {t.cfg.env: summarise(member_fitness(r))["fitness_mean"]
                                for t, r in zip(tasks, returns, strict=True)}}
            if self.paired:
                line["tasks"] = [t.name for t in tasks]
                line["ppo"] = dict(self.last_ppo)
            if g == 0:
                line["fitness_of_initial_mean"] = extra.get("fitness_of_initial_mean")
                if self.valid_tasks:
                    line["validation_of_initial_mean"] = extra.get("validation_of_initial_mean")
            t_mean = time.perf_counter()
            last = g + 1 == config.generations
            if (g + 1) % config.eval_every == 0 or last:
                line["fitness_of_mean"] = self.evaluate_mean(es_state)
                env_steps += sum(rows * t.cfg.seeds * t.steps_per_run for t in self.tasks)
                if last:
                    final = extra["fitness_of_final_mean"] = line["fitness_of_mean"]
            if self.valid_tasks and ((g + 1) % config.validation.every == 0 or last):
                line["validation"], line["validation_tasks"] = self.validate(es_state)
                env_steps += sum(2 * t.cfg.seeds * t.steps_per_run for t in self.valid_tasks)
                self._keep_if_best(es_state, g + 1, extra, line["validation"])
                line["best_generation"] = extra.get("best_generation")
            if last and self.valid_tasks:
                extra["fitness_of_best"] = self._fitness_of_best(extra, final)
                line["fitness_of_best"] = extra["fitness_of_best"]
            line["env_steps"] = env_steps
            t2 = time.perf_counter()
            t_mean = t2 - t_mean
            line["seconds"] = t2 - t0
            line["es_seconds"] = t_ask + t_tell
            if self.writer:
                self._append_metrics(line)
                self._write_objective(dist.to_host(self._mean(es_state)))
                if (g + 1) % config.checkpoint_every == 0 or g + 1 == config.generations:
                    self._checkpoint(es_state, g + 1, env_steps, extra, metrics_lines=g + 1)
            if bar is not None:
                best = line["fitness_max"]
                bar.set_postfix_str(f"fitness {line['fitness_mean'] or float('nan'):.4g} (max "
                                    f"{best if best is not None else float('nan'):.4g}), {line['seconds']:.1f} s/gen")
                bar.update(1)
            t3 = time.perf_counter()
            self.timing.generation.append(t3 - t0)
            self.timing.evaluate.append(t_eval)
            self.timing.mean_eval.append(t_mean)
            self.timing.es.append(t_ask + t_tell)
            self.timing.io.append(t3 - t2)
        if bar is not None:
            bar.close()
        if self.writer:
            self._write_summary(extra, env_steps, max(start, config.generations))
            self._plot()
        return RunResult(max(start, config.generations), extra.get("fitness_of_initial_mean"), final,
                         dist.to_host(self._mean(es_state)), self.timing, extra.get("best_generation"),
                         extra.get("best_validation"), extra.get("fitness_of_best"))

    def _keep_if_best(self, es_state, generation: int, extra: dict, score: float | None) -> None:
        """Keep the ES mean as objective_best.msgpack when its validation score is the best so far (generation
        0, PPO itself, scores 1 and is kept first; ties keep the earlier objective)."""
        if score is None or ("best_validation" in extra and score <= extra["best_validation"]):
            return
        extra["best_validation"], extra["best_generation"] = float(score), int(generation)
        if self.writer:
            from metadisco.objectives.files import save_objective

            save_objective(self.out / BEST_OBJECTIVE, self.objective, dist.to_host(self._mean(es_state)))

    def _fitness_of_best(self, extra: dict, final_mean_fitness: float | None) -> float | None:
        """The kept objective's PPO-normalised fitness on fresh seeds of every training task (and length)."""
        if extra.get("best_generation") == self.config.generations:
            return final_mean_fitness
        if self.out is None:
            return None
        from metadisco.objectives.files import load_objective

        _, meta = load_objective(self.out / BEST_OBJECTIVE)
        return self.score_paired(meta, self.tasks, self._fresh_keys, self._population_rows())[0]

    def _checkpoint(self, es_state, generation: int, env_steps: int, extra: dict, metrics_lines: int) -> None:
        leaves = jax.tree.leaves(dist.to_host(es_state))
        ckpt_lib.save(self.out / "checkpoints", ckpt_lib.Checkpoint(
            generation, self.base_key, leaves, self.scales if self.paired else self.normalisers_by_env,
            metrics_lines, env_steps, self.digest,
            {k: v for k, v in extra.items() if v is not None}))

    def _progress_bar(self, start: int):
        if not self.progress or self.config.generations == 0:
            return None
        from tqdm import tqdm

        return tqdm(total=self.config.generations, initial=start, desc="meta-train", unit="gen", file=sys.stderr,
                    dynamic_ncols=True)

    def _write_summary(self, extra: dict, env_steps: int, done: int) -> None:
        """summary.json, rewritten to match what was done: a resume with fewer generations than the checkpoint
        has done changes nothing, and the summary says the checkpoint's count, not the request."""
        if done > self.config.generations:
            self._say(f"the run in {self.out} has done {done} generations, more than generations="
                      f"{self.config.generations}: nothing to do")
        summary = {"generations": done, "env_steps": env_steps,
                   "fitness_of_initial_mean": extra.get("fitness_of_initial_mean"),
                   "fitness_of_final_mean": extra.get("fitness_of_final_mean"),
                   "normalisers": self.normalisers_by_env, "objective": "objective.msgpack",
                   "devices": int(self.mesh.devices.size)}
        if self.paired:
            summary["normalise"] = "paired: 1 + (x - ppo on the same seed keys) / ppo_gap[task]"
            summary["random_policy"] = self.random_returns
        if self.valid_tasks:
            summary.update({"objective_best": BEST_OBJECTIVE, "best_generation": extra.get("best_generation"),
                            "best_validation": extra.get("best_validation"),
                            "fitness_of_best": extra.get("fitness_of_best")})
        atomic_write_text(self.out / "summary.json", json.dumps(to_jsonable(summary), indent=2) + "\n")

    def _plot(self) -> None:
        path = self.out / "metrics.jsonl"
        lines = []
        for text in path.read_text().splitlines() if path.is_file() else []:
            try:  # the figure is a convenience: a line damaged outside this run is left out of it, not fatal
                lines.append(json.loads(text))
            except json.JSONDecodeError:
                continue
        if not lines:
            return
        atomic_write_bytes(self.out / "meta_curve.png", plot_curve(lines, self.config.fitness))


def plot_curve(lines: list[dict], fitness_name: str) -> bytes:
    """PNG bytes of the population's fitness per generation and the ES mean's on fresh seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def col(key):
        return np.asarray([np.nan if x.get(key) is None else x[key] for x in lines], float)

    g = np.asarray([x["generation"] for x in lines]) + 1  # generations done
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.fill_between(g, col("fitness_min"), col("fitness_max"), alpha=0.2, label="population min-max")
    ax.plot(g, col("fitness_mean"), label="population mean")
    mx, my = [], []
    if lines[0].get("fitness_of_initial_mean") is not None:
        mx.append(0)
        my.append(lines[0]["fitness_of_initial_mean"])
    for x in lines:
        if x.get("fitness_of_mean") is not None:
            mx.append(x["generation"] + 1)
            my.append(x["fitness_of_mean"])
    if mx:
        ax.plot(mx, my, "o-", color="black", label="ES mean, fresh seeds")
    ax.set_xlabel("generations")
    ax.set_ylabel(f"fitness ({fitness_name})")
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def meta_train(config: MetaConfig | dict, out: str | Path | None, resume: bool = False, mesh=None,
               progress: bool = True, overrides=()) -> RunResult:
    """Library entry point: run (or resume) meta-training into `out`."""
    if not isinstance(config, MetaConfig):
        config = parse_config(config, overrides)
    return MetaRun(config, out, resume=resume, mesh=mesh, progress=progress).run()
