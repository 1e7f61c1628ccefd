"""The outer loop's hooks: what happens after a generation's tell, each on its own period.

    ScoreMean       every `eval_every` and at the last: the ES mean on fresh seeds (metrics' `fitness_of_mean`)
    Validate        every `validation.every` and at the last: the ES mean on the validation tasks; the best is
                    kept as objective_best.msgpack
    ScoreBest       at the last, with validation: the kept objective on fresh seeds of the training tasks
    WriteObjective  every generation (the writer): objective.msgpack and hyper.json
    Checkpoint      every `checkpoint_every` and at the last (the writer): ES state, key, typed run record

The scoring hooks run before the generation's metrics line is written (they add to it); the writing hooks after.
Every hook reads the ES mean through `GenerationView.mean()`, which computes it once per generation.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from metadisco.core import checkpoint as ckpt_lib
from metadisco.meta.baselines import Baselines
from metadisco.meta.record import RunRecord
from metadisco.meta.step import GenerationStep
from metadisco.parallel import hosts
from metadisco.runs.rundir import HYPER, RunDir


@dataclass
class RunState:
    """What the loop and its hooks carry between generations."""

    step: GenerationStep
    run_dir: RunDir | None
    baselines: Baselines
    record: RunRecord
    env_steps: int = 0

    @functools.cached_property
    def digest(self) -> str:
        """The resolved config's digest, which every checkpoint records (computed once per run)."""
        return ckpt_lib.config_digest(self.step.config.to_yaml())

    @property
    def has_validation(self) -> bool:
        """Whether the run has validation tasks (a `validation:` section), so that it keeps a best objective."""
        return bool(self.step.problem.valid_tasks)

    @property
    def writer(self) -> bool:
        return self.run_dir is not None and self.run_dir.writer

    def counting(self, work, *args):
        """`work(*args)`, its env steps (the problem's scoring calls as they ran, `MetaProblem.ran`) added to the
        run's; its value returned."""
        ran = self.step.problem.env_steps
        out = work(*args)
        self.env_steps += self.step.problem.env_steps - ran
        return out

    def keep_if_best(self, point, generation: int, score: float | None) -> None:
        """Keep the ES point as objective_best.msgpack when its validation score is the best so far (generation
        0, PPO itself, scores 1 and is kept first; ties keep the earlier objective). Its hyper units, if any,
        go to the record (`best_hyper`) and hyper.json."""
        record = self.record
        if score is None or (record.best_validation is not None and score <= record.best_validation):
            return
        record.best_validation, record.best_generation = float(score), int(generation)
        meta, units = self.step.split(point)
        if units is not None:
            record.best_hyper = {name: float(np.asarray(u)) for name, u in units.items()}
        if self.run_dir is not None:
            self.run_dir.write_objective(self.step.objective, meta, best=True)

    def hyper_report(self, units: dict, generation: int) -> dict:
        """One point's evolved settings, for hyper.json: its units and each task's values."""
        return {"generation": int(generation), "units": {k: float(np.asarray(v)) for k, v in units.items()},
                "tasks": self.step.hyper_values(units)}

    def write_mean(self, point, generation: int) -> None:
        """objective.msgpack (the ES point's objective) and, with a `hyper:` section, hyper.json: the point's
        settings and the kept objective's (`best`, with validation)."""
        meta, units = self.step.split(point)
        self.run_dir.write_objective(self.step.objective, meta)
        if units is None:
            return
        doc = {"searched": self.step.hyper.to_plain(), "es_mean": self.hyper_report(units, generation)}
        if self.record.best_hyper is not None:
            doc["best"] = self.hyper_report(self.record.best_hyper, self.record.best_generation)
        self.run_dir.write_json(HYPER, doc)

    def checkpoint(self, es_state, generation: int, metrics_lines: int) -> None:
        step = self.step
        leaves = jax.tree.leaves(hosts.to_host(es_state))
        self.run_dir.save_checkpoint(ckpt_lib.Checkpoint(
            generation, step.base_key, leaves, self.baselines.cached(), metrics_lines, self.env_steps,
            self.digest, self.record.to_plain()))


@dataclass
class GenerationView:
    """One generation as its hooks see it: the ES state after tell, the metrics line being built, and the ES mean,
    computed on first use and then shared."""

    generation: int  # 0-based; the ES state has done generation + 1 tells
    last: bool
    es_state: Any
    line: dict
    step: GenerationStep
    _mean: Any = field(default=None, repr=False)

    def mean(self):
        if self._mean is None:
            self._mean = self.step.solution(self.es_state)
        return self._mean

    @property
    def done(self) -> int:
        return self.generation + 1


class Periodic:
    """A hook due every `every` generations and at the last."""

    def __init__(self, every: int):
        self.every = every

    def due(self, view: GenerationView) -> bool:
        return view.done % self.every == 0 or view.last


class ScoreMean(Periodic):
    key = "fitness_of_mean"  # the metrics line's field it fills

    def __call__(self, view: GenerationView, run: RunState) -> None:
        step = run.step
        view.line["fitness_of_mean"] = run.counting(step.problem.mean_fitness, view.mean(), run.baselines)
        if step.problem.grid:
            view.line["tuned_mean"] = step.problem.last_choice  # the grid point the mean scored at, per task
        if view.last:
            run.record.fitness_of_final_mean = view.line["fitness_of_mean"]


class Validate(Periodic):
    key = "validation"  # the metrics line's field it fills

    def __call__(self, view: GenerationView, run: RunState) -> None:
        view.line["validation"], view.line["validation_tasks"] = run.counting(
            run.step.problem.validation, view.mean(), run.baselines)
        if run.step.problem.grid:
            view.line["tuned_validation"] = run.step.problem.last_choice
        run.keep_if_best(view.mean(), view.done, view.line["validation"])
        view.line["best_generation"] = run.record.best_generation


class ScoreBest:
    """The kept objective's PPO-normalised fitness on fresh seeds of every training task (and length)."""
    key = "fitness_of_best"  # the metrics line's field it fills

    def due(self, view: GenerationView) -> bool:
        return view.last

    def __call__(self, view: GenerationView, run: RunState) -> None:
        record, step = run.record, run.step
        if record.best_generation is None:  # no validation ever had a finite score: nothing was kept
            record.fitness_of_best = None
        elif record.best_generation == step.config.generations:
            record.fitness_of_best = record.fitness_of_final_mean
        elif record.best_generation == 0:  # generation 0's mean: scored on these fresh seeds before the first
            record.fitness_of_best = record.fitness_of_initial_mean
        elif run.run_dir is None:
            record.fitness_of_best = None
        else:
            problem = step.problem
            record.fitness_of_best = problem.score_paired(_best_point(run), problem.tasks, problem.fresh_keys,
                                                          run.baselines, problem.population_rows())[0]
        view.line["fitness_of_best"] = record.fitness_of_best


def _best_point(run: RunState):
    """The kept ES point: objective_best.msgpack's meta-parameters, with the kept hyper units."""
    meta = run.run_dir.load_best_meta()
    if not run.step.hyper:
        return meta
    return run.step.hyper.join(meta, {k: np.float32(v) for k, v in run.record.best_hyper.items()})


class WriteObjective:
    def due(self, view: GenerationView) -> bool:
        return True

    def __call__(self, view: GenerationView, run: RunState) -> None:
        run.write_mean(view.mean(), view.done)


class Checkpoint(Periodic):
    def __call__(self, view: GenerationView, run: RunState) -> None:
        run.checkpoint(view.es_state, view.done, metrics_lines=view.done)


def scoring_hooks(config, valid: bool) -> list:
    """The hooks that add to a generation's metrics line, in the order they run."""
    return [ScoreMean(config.eval_every), *([Validate(config.validation.every), ScoreBest()] if valid else [])]


def writing_hooks(config) -> list:
    """The writer's hooks, after the metrics line is appended."""
    return [WriteObjective(), Checkpoint(config.checkpoint_every)]


def run_hooks(hooks, view: GenerationView, run: RunState) -> dict[str, float]:
    """Run the hooks due at `view`, in order; {hook's metrics key: seconds} of those that ran, so that a run's
    metrics say what its scoring generations spent their time on (a hook without a `key` is not timed)."""
    seconds = {}
    for hook in hooks:
        if hook.due(view):
            start = time.perf_counter()
            hook(view, run)
            if getattr(hook, "key", None):
                seconds[hook.key] = time.perf_counter() - start
    return seconds
