"""What a meta-training run reports as it goes: progress, timing and figures are callbacks (brax's `progress_fn`
idea), so the loop knows nothing of tqdm, benchmarks or matplotlib.

A callback is any object with some of these methods (a missing one is skipped):

    on_start(start: int, generations: int)        before the first generation to run (`start` = those done)
    on_generation(line: dict, seconds: Seconds)   after each generation: its metrics line, as written to
                                                  metrics.jsonl, and where its time went
    on_end(result: RunResult, run_dir: RunDir | None)   after the last generation and summary.json

    meta_train(config, out, callbacks=[MyLogger()])
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Seconds:
    """Where one generation's time went."""

    generation: float  # the whole generation
    train: float  # training the members (the work itself)
    mean_eval: float  # training the ES mean on fresh seeds, validation (when due)
    es: float  # ask + tell
    io: float  # metrics line, objective file, checkpoint


def notify(callbacks, event: str, *args) -> None:
    for callback in callbacks:
        method = getattr(callback, event, None)
        if method is not None:
            method(*args)


@dataclass
class Timing:
    """Per-generation seconds, for the benchmark's ES-overhead figure (`RunResult.timing`)."""

    generation: list[float] = field(default_factory=list)
    train: list[float] = field(default_factory=list)  # training the members
    mean_eval: list[float] = field(default_factory=list)
    es: list[float] = field(default_factory=list)
    io: list[float] = field(default_factory=list)

    def on_generation(self, line: dict, seconds: Seconds) -> None:
        self.generation.append(seconds.generation)
        self.train.append(seconds.train)
        self.mean_eval.append(seconds.mean_eval)
        self.es.append(seconds.es)
        self.io.append(seconds.io)

    def overhead_fraction(self, skip: int = 1) -> float:
        """Share of a generation that is not training (ES, keys, fitness, logging, checkpoint), from the
        generations after the first `skip`; mean evaluations are work, not overhead, and are left out."""
        gen, work, mean = (np.asarray(x[skip:]) for x in (self.generation, self.train, self.mean_eval))
        return float(np.sum(gen - work - mean) / np.sum(gen - mean))


class ProgressBar:
    """A tqdm bar on stderr: generations done, the population's fitness, seconds per generation."""

    def __init__(self):
        self.bar = None

    def on_start(self, start: int, generations: int) -> None:
        if generations == 0:
            return
        from tqdm import tqdm

        self.bar = tqdm(total=generations, initial=start, desc="meta-train", unit="gen", file=sys.stderr,
                        dynamic_ncols=True)

    def on_generation(self, line: dict, seconds: Seconds) -> None:
        if self.bar is None:
            return
        best = line["fitness_max"]
        self.bar.set_postfix_str(f"fitness {line['fitness_mean'] or float('nan'):.4g} (max "
                                 f"{best if best is not None else float('nan'):.4g}), {line['seconds']:.1f} s/gen")
        self.bar.update(1)

    def on_end(self, result, run_dir) -> None:
        if self.bar is not None:
            self.bar.close()


class MetaCurveFigure:
    """At the end: RUN_DIR/meta_curve.png from metrics.jsonl (`metadisco.figures.meta_curve`)."""

    def __init__(self, fitness_name: str):
        self.fitness_name = fitness_name

    def on_end(self, result, run_dir) -> None:
        if run_dir is None or not run_dir.writer:
            return
        lines = run_dir.read_metrics(lenient=True)  # the figure is a convenience: a damaged line is left out
        if lines:
            from metadisco.figures.meta_curve import meta_curve
            from metadisco.runs.rundir import META_CURVE

            meta_curve(lines, self.fitness_name, run_dir / META_CURVE)
