"""The meta-training run: `meta_train(config, out)` drives `GenerationStep` generation by generation, with
baselines, the run directory (metrics, objective files, checkpoints, resume) and callbacks (progress, timing,
figures).

The pieces, each usable on its own:

    metadisco.meta.strategy    Strategy: the ES wrapper (evosax), init / ask / tell / mean
    metadisco.meta.step        GenerationStep: ask -> train the population on each task -> fitness -> tell
    metadisco.meta.hooks       what follows a tell, each on its own period: score the mean, validate and keep
                               the best, write the objective, checkpoint (the ES mean computed once)
    metadisco.meta.record      RunRecord: the typed facts a checkpoint carries beside the ES state
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

import numpy as np

from metadisco.core import checkpoint as ckpt_lib
from metadisco.core.errors import UserError
from metadisco.meta.baselines import initial_fitness, initial_validation, measure_baselines
from metadisco.meta.callbacks import MetaCurveFigure, ProgressBar, Seconds, Timing, notify
from metadisco.meta.config import MetaConfig
from metadisco.meta.hooks import GenerationView, RunState, run_hooks, scoring_hooks, writing_hooks
from metadisco.meta.load import as_written_now, parse_config
from metadisco.meta.problem import member_fitness
from metadisco.meta.record import RunRecord
from metadisco.meta.step import GenerationStep, fitness_stats, task_stats
from metadisco.meta.tuning import chosen_report
from metadisco.parallel import hosts
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


def run_meta_training(step: GenerationStep, out: str | Path | RunDir | None, resume: bool = False,
                      progress: bool = True, callbacks=(), plot: bool = True, notes: bool | None = None) -> RunResult:
    """Run (or resume) meta-training of `step`'s config into the run directory `out` (None: nothing written,
    e.g. in benchmarks). `callbacks` are added to the defaults: a progress bar (`progress`, on the writer
    process), timing (always; `RunResult.timing`) and, with a run directory, meta_curve.png (`plot`). `notes`
    (default: as `progress`): the writer's one-off lines on stderr (baselines measured, resume point), which the
    command keeps when stderr is a log and the bar is off. The writer holds the run directory's lock throughout
    (`metadisco.core.lock`)."""
    writer = hosts.is_writer()
    say = _stderr if (progress if notes is None else notes) and writer else _quiet
    run_dir = out if isinstance(out, RunDir) or out is None else RunDir(out, writer=writer, say=say)
    with run_dir.writing() if run_dir is not None else contextlib.nullcontext():
        return _run_meta_training(step, run_dir, resume, progress and writer, say, callbacks, plot)


def _write_summary(run: RunState, done: int, say) -> None:
    """summary.json, rewritten to match what was done: a resume with fewer generations than the checkpoint
    has done changes nothing, and the summary says the checkpoint's count, not the request."""
    step, record = run.step, run.record
    if done > step.config.generations:
        say(f"the run in {run.run_dir.path} has done {done} generations, more than generations="
            f"{step.config.generations}: nothing to do")
    summary = {"generations": done, "env_steps": run.env_steps,
               "fitness_of_initial_mean": record.fitness_of_initial_mean,
               "fitness_of_final_mean": record.fitness_of_final_mean,
               "normalisers": run.baselines.normalisers, "objective": OBJECTIVE,
               "devices": step.devices}
    if step.hyper:
        summary["hyper"] = HYPER
    if step.problem.paired:
        summary["normalise"] = "paired: 1 + (x - baseline on the same seed keys) / baseline_gap[task]"
        summary["random_policy"] = run.baselines.random
    if step.problem.grid:
        summary["fitness_tune"] = ("each member, the ES mean and the baseline scored at its own best point of "
                                   + "; ".join(step.problem.grid.labels()))
    if step.problem.ranked:
        summary["combine"] = ("rank: the ES is told the mean over tasks of centred ranks within each task; "
                              "fitness_* are the normalised mean over tasks")
    if run.has_validation:
        kept = BEST_OBJECTIVE if record.best_generation is not None else None  # None: validation never scored
        summary.update({"objective_best": kept, "best_generation": record.best_generation,
                        "best_validation": record.best_validation, "fitness_of_best": record.fitness_of_best})
    run.run_dir.write_json(SUMMARY, summary)


def _task_names(tasks) -> str:
    return ", ".join(t.name for t in tasks)


def _run_meta_training(step: GenerationStep, run_dir: RunDir | None, resume: bool, progress: bool, say,
                       callbacks, plot: bool) -> RunResult:
    config = step.config
    timing = Timing()
    callbacks = [timing, *([ProgressBar()] if progress else []),
                 *([MetaCurveFigure(config.fitness.score)] if plot and run_dir is not None else []), *callbacks]
    config_yaml = config.to_yaml()

    ckpt = run_dir.resume_point(resume, config_yaml, config.to_dict(), step.mesh, upgrade=as_written_now) \
        if run_dir is not None else None
    init_state = step.init()
    if ckpt is not None:
        if not np.array_equal(ckpt.key, step.base_key):
            raise UserError(f"the checkpoint in {run_dir.path} was made with another seed")
        es_state = hosts.to_global(ckpt_lib.restore_state(hosts.to_host(init_state), ckpt), step.mesh)
        start, env_steps, record = ckpt.generation, ckpt.env_steps, RunRecord.from_plain(ckpt.extra)
        baselines = measure_baselines(step.problem, ckpt.normalisers, say)
        run_dir.truncate_metrics(ckpt.metrics_lines)
    else:
        es_state, start, env_steps, record = init_state, 0, 0, RunRecord()
        if run_dir is not None:
            run_dir.start_fresh()
        baselines = measure_baselines(step.problem, {}, say)
    run = RunState(step, run_dir, baselines, record, env_steps)
    if run.writer:
        run_dir.write_config(config_yaml, step.mesh)
        if baselines.to_json() is not None:
            run_dir.write_json(BASELINES, baselines.to_json())

    initial = GenerationView(-1, False, es_state, {}, step)  # the ES state before the first tell
    if start == 0 and record.fitness_of_initial_mean is None and config.generations > 0:
        record.fitness_of_initial_mean = initial_fitness(step.problem, initial.mean(), baselines, say)
    if start == 0 and run.has_validation and record.best_generation is None:
        record.validation_of_initial_mean = initial_validation(step.problem, initial.mean(), baselines, say)
        run.keep_if_best(initial.mean(), 0, record.validation_of_initial_mean)
        if record.validation_of_initial_mean is None:
            say(f"warning: the initial objective has no validation score on {_task_names(step.problem.valid_tasks)} "
                "(no finite return: no episode ended within a validation task's timesteps, or its runs diverged); "
                "no objective is kept until a later ES mean scores")
    if run.writer and ckpt is None:
        run.write_mean(initial.mean(), 0)
        run.checkpoint(es_state, 0, metrics_lines=0)

    scoring, writing = scoring_hooks(config, run.has_validation), writing_hooks(config)
    notify(callbacks, "on_start", start, config.generations)
    view = initial
    for g in range(start, config.generations):
        t0 = time.perf_counter()
        es_state, out_g = run.counting(step, es_state, g, baselines)
        line = {"generation": g, **fitness_stats(out_g.fitness),
                "returns": {t.cfg.env: fitness_stats(member_fitness(r))["fitness_mean"]
                            for t, r in zip(out_g.tasks, out_g.returns, strict=True)}}
        if step.problem.paired:
            line["tasks"] = [t.name for t in out_g.tasks]
            line["baseline"] = dict(out_g.baseline)
        if config.sampling.scale:  # the drawn settings each task trained at this generation
            line["settings"] = {t.name: {name: float(t.train_config.setting(name)) for name in config.sampling.scale}
                                for t in out_g.tasks}
        if out_g.chosen is not None:  # tuned fitness: where each member scored, so a reader sees the step size move
            line["tuned"] = chosen_report(step.problem.grid, out_g.tasks, out_g.chosen, out_g.baseline_chosen)
        if len(step.problem.tasks) > 1:  # which task moves the population, and which spreads it (what ranks the ES)
            line["task_fitness"], line["task_spread"] = task_stats(out_g.tasks, out_g.scores)
        if g == 0:
            line["fitness_of_initial_mean"] = record.fitness_of_initial_mean
            if run.has_validation:
                line["validation_of_initial_mean"] = record.validation_of_initial_mean
        view = GenerationView(g, g + 1 == config.generations, es_state, line, step)
        t_mean = time.perf_counter()
        scored = run_hooks(scoring, view, run)
        if scored:  # a scoring generation: where its extra time went (training the ES mean, validating)
            line["scoring_seconds"] = scored
        line["env_steps"] = run.env_steps
        t2 = time.perf_counter()
        t_mean = t2 - t_mean
        line["seconds"] = t2 - t0
        line["es_seconds"] = out_g.es_seconds
        if run.writer:
            run_dir.append_metrics(line)
            run_hooks(writing, view, run)
        t3 = time.perf_counter()
        notify(callbacks, "on_generation", line,
               Seconds(t3 - t0, out_g.train_seconds, t_mean, out_g.es_seconds, t3 - t2))
    done = max(start, config.generations)
    if run.writer:
        _write_summary(run, done, say)
    meta, units = step.split(view.mean())  # the last generation's mean (the restored one if none ran here)
    result = RunResult(done, record.fitness_of_initial_mean, record.fitness_of_final_mean, meta, timing,
                       record.best_generation, record.best_validation, record.fitness_of_best,
                       run.hyper_report(units, done) if units is not None else None)
    notify(callbacks, "on_end", result, run_dir)
    return result


def meta_train(config: MetaConfig | dict, out: str | Path | None, resume: bool = False, mesh=None,
               progress: bool = True, overrides=(), callbacks=(), plot: bool = True) -> RunResult:
    """Library entry point: run (or resume) meta-training into `out` (None: nothing written).

    Args:
        config: a `MetaConfig` (`load_config("quickstart")`, `parse_config(data)`) or its plain data (parsed YAML).
        out: the run directory: `metrics.jsonl` (one line per generation), `objective.msgpack` (the ES mean),
            `objective_best.msgpack` (with validation: the kept objective), `summary.json`, `config.yaml`,
            `checkpoints/`; None writes nothing.
        resume: continue the run that `out` holds from its last checkpoint, with the same results as one
            uninterrupted run (on the same machine type and device count).
        mesh: the devices the population is sharded over (`metadisco.parallel.sharding.make_mesh`); default every
            device of every process.
        progress: a progress bar on stderr.
        overrides: `key=value` changes of a plain-data `config`, as `--set` gives them.
        callbacks: objects with `on_start`, `on_generation(line, seconds)` and `on_end` (`metadisco.meta.callbacks`),
            e.g. a tracker.
        plot: draw `meta_curve.png` at the end.

    Returns:
        `RunResult`: generations done, the PPO-normalised fitness of the first and last ES means on fresh seeds, the
        final mean's meta-parameters, timings, and with validation the kept generation and its scores.
    """
    if not isinstance(config, MetaConfig):
        config = parse_config(config, overrides)
    return run_meta_training(GenerationStep(config, mesh), out, resume=resume, progress=progress,
                             callbacks=callbacks, plot=plot)
