"""The meta-training run: `meta_train(config, out)` drives `GenerationStep` generation by generation, with
baselines, the run directory (metrics, objective files, checkpoints, resume) and callbacks (progress, timing,
figures).

The pieces, each usable on its own:

    metadisco.meta.step        GenerationStep: ask -> train the population -> fitness -> tell (one generation)
    metadisco.meta.baselines   measure_baselines: the PPO normalisers / scales fitness is scored against
    metadisco.runs.rundir      RunDir: the run directory's layout, resume checks and files
    metadisco.meta.callbacks   ProgressBar, Timing, MetaCurveFigure (and any object of the same shape)

Every generation writes a metrics.jsonl line and objective.msgpack (the ES mean), and a checkpoint every
`checkpoint_every` generations; a resumed run repeats exactly what the uninterrupted run would have done
(every key derives from (config.seed, generation)). The ES mean is scored on fresh seeds every `eval_every`
generations; with validation tasks, the best-validating ES mean is kept as objective_best.msgpack. With a
`hyper:` section the objective files hold the objective's meta-parameters alone and hyper.json the evolved
settings (of the ES mean, and of the kept objective).
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

from metadisco.core import checkpoint as ckpt_lib
from metadisco.core.errors import UserError
from metadisco.meta.baselines import Baselines, initial_fitness, initial_validation, measure_baselines
from metadisco.meta.callbacks import MetaCurveFigure, ProgressBar, Seconds, Timing, notify
from metadisco.meta.config import MetaConfig
from metadisco.meta.load import parse_config
from metadisco.meta.step import (  # noqa: F401  (the stream tags and fitness helpers are part of this API)
    EVAL_STREAM,
    INIT_STREAM,
    REFERENCE_STREAM,
    START_STREAM,
    VALIDATION_STREAM,
    GenerationStep,
    combine,
    fitness_stats,
    member_fitness,
    task_stats,
)
from metadisco.parallel import hosts as dist
from metadisco.runs.rundir import BASELINES, BEST_OBJECTIVE, HYPER, OBJECTIVE, SUMMARY, RunDir


@dataclass
class RunResult:
    generations_done: int
    fitness_of_initial_mean: float | None
    fitness_of_final_mean: float | None
    mean: Any  # the final ES mean's objective meta-parameters (host numpy pytree), as objective.msgpack holds
    timing: Timing
    best_generation: int | None = None  # with validation: the generation of the kept objective
    best_validation: float | None = None  # its PPO-normalised validation score
    fitness_of_best: float | None = None  # its PPO-normalised fitness on fresh seeds of the training tasks
    hyper: dict | None = None  # with a `hyper:` section: the final ES mean's settings, as hyper.json's es_mean


def _stderr(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _quiet(message: str) -> None:
    pass


class _Run:
    """The state of one run of `run_meta_training`: what the loop carries between generations."""

    def __init__(self, step: GenerationStep, run_dir: RunDir | None, baselines: Baselines, say):
        self.step, self.run_dir, self.baselines, self.say = step, run_dir, baselines, say
        self.config = step.config
        self.valid = bool(step.valid_tasks)
        self.digest = ckpt_lib.config_digest(self.config.to_yaml())

    def steps_per_pass(self, tasks, rows: int) -> int:
        return sum(rows * t.cfg.seeds * t.steps_per_run for t in tasks)

    def keep_if_best(self, point, generation: int, extra: dict, score: float | None) -> None:
        """Keep the ES mean as objective_best.msgpack when its validation score is the best so far (generation
        0, PPO itself, scores 1 and is kept first; ties keep the earlier objective). Its hyper units, if any,
        go to the checkpoint's facts (`best_hyper`) and hyper.json."""
        if score is None or ("best_validation" in extra and score <= extra["best_validation"]):
            return
        extra["best_validation"], extra["best_generation"] = float(score), int(generation)
        meta, units = self.step.split(point)
        if units is not None:
            extra["best_hyper"] = {name: float(np.asarray(u)) for name, u in units.items()}
        if self.run_dir is not None:
            self.run_dir.write_objective(self.step.objective, meta, best=True)

    def best_point(self, extra: dict):
        """The kept ES point: objective_best.msgpack's meta-parameters, with the kept hyper units (`extra`)."""
        meta = self.run_dir.load_best_meta()
        if not self.step.hyper:
            return meta
        return self.step.hyper.join(meta, {k: np.float32(v) for k, v in extra["best_hyper"].items()})

    def hyper_report(self, units: dict, generation: int) -> dict:
        """One point's evolved settings, for hyper.json: its units and each task's values."""
        return {"generation": int(generation), "units": {k: float(np.asarray(v)) for k, v in units.items()},
                "tasks": self.step.hyper_values(units)}

    def write_mean(self, point, generation: int, extra: dict) -> None:
        """objective.msgpack (the ES mean's objective) and, with a `hyper:` section, hyper.json: the ES mean's
        settings and the kept objective's (`best`, with validation)."""
        meta, units = self.step.split(point)
        self.run_dir.write_objective(self.step.objective, meta)
        if units is None:
            return
        doc = {"searched": self.step.hyper.to_plain(), "es_mean": self.hyper_report(units, generation)}
        if "best_hyper" in extra:
            doc["best"] = self.hyper_report(extra["best_hyper"], extra["best_generation"])
        self.run_dir.write_json(HYPER, doc)

    def fitness_of_best(self, extra: dict, final_mean_fitness: float | None) -> float | None:
        """The kept objective's PPO-normalised fitness on fresh seeds of every training task (and length)."""
        if extra.get("best_generation") == self.config.generations:
            return final_mean_fitness
        if self.run_dir is None:
            return None
        step = self.step
        return step.score_paired(self.best_point(extra), step.tasks, step.fresh_keys, self.baselines,
                                 step.population_rows())[0]

    def checkpoint(self, es_state, generation: int, env_steps: int, extra: dict, metrics_lines: int) -> None:
        step = self.step
        leaves = jax.tree.leaves(dist.to_host(es_state))
        self.run_dir.save_checkpoint(ckpt_lib.Checkpoint(
            generation, step.base_key, leaves, self.baselines.cached(), metrics_lines, env_steps,
            self.digest, {k: v for k, v in extra.items() if v is not None}))

    def write_summary(self, extra: dict, env_steps: int, done: int) -> None:
        """summary.json, rewritten to match what was done: a resume with fewer generations than the checkpoint
        has done changes nothing, and the summary says the checkpoint's count, not the request."""
        if done > self.config.generations:
            self.say(f"the run in {self.run_dir.path} has done {done} generations, more than generations="
                     f"{self.config.generations}: nothing to do")
        summary = {"generations": done, "env_steps": env_steps,
                   "fitness_of_initial_mean": extra.get("fitness_of_initial_mean"),
                   "fitness_of_final_mean": extra.get("fitness_of_final_mean"),
                   "normalisers": self.baselines.normalisers, "objective": OBJECTIVE,
                   "devices": self.step.devices}
        if self.step.hyper:
            summary["hyper"] = HYPER
        if self.step.paired:
            summary["normalise"] = "paired: 1 + (x - ppo on the same seed keys) / ppo_gap[task]"
            summary["random_policy"] = self.baselines.random
        if self.step.ranked:
            summary["combine"] = ("rank: the ES is told the mean over tasks of centred ranks within each task; "
                                  "fitness_* are the normalised mean over tasks")
        if self.valid:
            summary.update({"objective_best": BEST_OBJECTIVE, "best_generation": extra.get("best_generation"),
                            "best_validation": extra.get("best_validation"),
                            "fitness_of_best": extra.get("fitness_of_best")})
        self.run_dir.write_json(SUMMARY, summary)


def run_meta_training(step: GenerationStep, out: str | Path | RunDir | None, resume: bool = False,
                      progress: bool = True, callbacks=(), plot: bool = True, notes: bool | None = None) -> RunResult:
    """Run (or resume) meta-training of `step`'s config into the run directory `out` (None: nothing written,
    e.g. in benchmarks). `callbacks` are added to the defaults: a progress bar (`progress`, on the writer
    process), timing (always; `RunResult.timing`) and, with a run directory, meta_curve.png (`plot`). `notes`
    (default: as `progress`): the writer's one-off lines on stderr (baselines measured, resume point), which the
    command keeps when stderr is a log and the bar is off. The writer holds the run directory's lock throughout
    (`metadisco.core.lock`)."""
    writer = dist.is_writer()
    say = _stderr if (progress if notes is None else notes) and writer else _quiet
    run_dir = out if isinstance(out, RunDir) or out is None else RunDir(out, writer=writer, say=say)
    with run_dir.writing() if run_dir is not None else contextlib.nullcontext():
        return _run_meta_training(step, run_dir, resume, progress and writer, say, callbacks, plot)


def _run_meta_training(step: GenerationStep, run_dir: RunDir | None, resume: bool, progress: bool, say,
                       callbacks, plot: bool) -> RunResult:
    config, P = step.config, step.population_size
    writer = run_dir is not None and run_dir.writer
    timing = Timing()
    callbacks = [timing, *([ProgressBar()] if progress else []),
                 *([MetaCurveFigure(config.fitness)] if plot and run_dir is not None else []), *callbacks]
    config_yaml = config.to_yaml()

    ckpt = run_dir.resume_point(resume, config_yaml, config.to_dict(), step.mesh) if run_dir is not None else None
    init_state = step.init()
    if ckpt is not None:
        if not np.array_equal(ckpt.key, step.base_key):
            raise UserError(f"the checkpoint in {run_dir.path} was made with another seed")
        es_state = dist.to_global(ckpt_lib.restore_state(dist.to_host(init_state), ckpt), step.mesh)
        start, env_steps, extra = ckpt.generation, ckpt.env_steps, dict(ckpt.extra)
        baselines = measure_baselines(step, ckpt.normalisers, say)
        run_dir.truncate_metrics(ckpt.metrics_lines)
    else:
        es_state, start, env_steps, extra = init_state, 0, 0, {}
        if run_dir is not None:
            run_dir.start_fresh()
        baselines = measure_baselines(step, {}, say)
    run = _Run(step, run_dir, baselines, say)
    if writer:
        run_dir.write_config(config_yaml, step.mesh)
        if baselines.to_json() is not None:
            run_dir.write_json(BASELINES, baselines.to_json())

    if start == 0 and "fitness_of_initial_mean" not in extra and config.generations > 0:
        extra["fitness_of_initial_mean"] = initial_fitness(step, step.mean(es_state), baselines, say)
    if start == 0 and run.valid and "best_generation" not in extra:
        mean = step.mean(es_state)
        extra["validation_of_initial_mean"] = initial_validation(step, mean, baselines, say)
        run.keep_if_best(mean, 0, extra, extra["validation_of_initial_mean"])
    if writer and ckpt is None:
        run.write_mean(step.mean(es_state), 0, extra)
        run.checkpoint(es_state, 0, env_steps, extra, metrics_lines=0)

    final = extra.get("fitness_of_final_mean") if start >= config.generations else None
    rows = step.population_rows() if step.paired else P
    notify(callbacks, "on_start", start, config.generations)
    for g in range(start, config.generations):
        t0 = time.perf_counter()
        es_state, out_g = step(es_state, g, baselines)
        env_steps += run.steps_per_pass(out_g.tasks, rows)
        line = {"generation": g, **fitness_stats(out_g.fitness),
                "returns": {t.cfg.env: fitness_stats(member_fitness(r))["fitness_mean"]
                            for t, r in zip(out_g.tasks, out_g.returns, strict=True)}}
        if step.paired:
            line["tasks"] = [t.name for t in out_g.tasks]
            line["ppo"] = dict(out_g.ppo)
        if config.sampling.scale:  # the drawn settings each task trained at this generation
            line["settings"] = {t.name: {name: float(getattr(t.train_config, name)) for name in config.sampling.scale}
                                for t in out_g.tasks}
        if len(step.tasks) > 1:  # which task moves the population, and which spreads it (what ranks the ES)
            line["task_fitness"], line["task_spread"] = task_stats(out_g.tasks, out_g.scores)
        if g == 0:
            line["fitness_of_initial_mean"] = extra.get("fitness_of_initial_mean")
            if run.valid:
                line["validation_of_initial_mean"] = extra.get("validation_of_initial_mean")
        t_mean = time.perf_counter()
        last = g + 1 == config.generations
        if (g + 1) % config.eval_every == 0 or last:
            line["fitness_of_mean"] = step.mean_fitness(step.mean(es_state), baselines)
            env_steps += run.steps_per_pass(step.tasks, rows)
            if last:
                final = extra["fitness_of_final_mean"] = line["fitness_of_mean"]
        if run.valid and ((g + 1) % config.validation.every == 0 or last):
            mean = step.mean(es_state)
            line["validation"], line["validation_tasks"] = step.validation(mean, baselines)
            env_steps += run.steps_per_pass(step.valid_tasks, 2)
            run.keep_if_best(mean, g + 1, extra, line["validation"])
            line["best_generation"] = extra.get("best_generation")
        if last and run.valid:
            extra["fitness_of_best"] = run.fitness_of_best(extra, final)
            line["fitness_of_best"] = extra["fitness_of_best"]
        line["env_steps"] = env_steps
        t2 = time.perf_counter()
        t_mean = t2 - t_mean
        line["seconds"] = t2 - t0
        line["es_seconds"] = out_g.es_seconds
        if writer:
            run_dir.append_metrics(line)
            run.write_mean(step.mean(es_state), g + 1, extra)
            if ((g + 1) % config.checkpoint_every == 0 or g + 1 == config.generations):
                run.checkpoint(es_state, g + 1, env_steps, extra, metrics_lines=g + 1)
        t3 = time.perf_counter()
        notify(callbacks, "on_generation", line,
               Seconds(t3 - t0, out_g.train_seconds, t_mean, out_g.es_seconds, t3 - t2))
    done = max(start, config.generations)
    if writer:
        run.write_summary(extra, env_steps, done)
    meta, units = step.split(step.mean(es_state))
    result = RunResult(done, extra.get("fitness_of_initial_mean"), final, meta, timing,
                       extra.get("best_generation"), extra.get("best_validation"), extra.get("fitness_of_best"),
                       run.hyper_report(units, done) if units is not None else None)
    notify(callbacks, "on_end", result, run_dir)
    return result


def meta_train(config: MetaConfig | dict, out: str | Path | None, resume: bool = False, mesh=None,
               progress: bool = True, overrides=(), callbacks=(), plot: bool = True) -> RunResult:
    """Library entry point: run (or resume) meta-training into `out` (None: nothing written)."""
    if not isinstance(config, MetaConfig):
        config = parse_config(config, overrides)
    return run_meta_training(GenerationStep(config, mesh), out, resume=resume, progress=progress,
                             callbacks=callbacks, plot=plot)
