"""Hyperparameter sweeps: a grid or random search over traced settings, every point x seed in ONE compiled call.

    env: CartPole-v1
    objective: ppo            # built-in name, objective file or meta-training run directory
    search: grid              # grid | random
    num: 9                    # grid: points per range (lists give their own); random: points in all
    seeds: 8
    timesteps: 100000
    train: {num_envs: 4}      # fixed settings (TrainConfig fields); preset: as `metadisco train`
    space: {lr: {low: 1.0e-5, high: 1.0e-1}}   # `metadisco.trainers.hyper_space`

Because the searched settings are traced (`metadisco.trainers.hyper`), the P points x S seeds are P * S runs of one
program (`train_seeds.runs_program`, a hyper per run), sharded over the devices and vmapped on each. Every point
trains on the same S seed keys (`seed_keys(S, seed)`: common random numbers, as `evaluate` does between
methods), so differences between points are not differences of luck in initialisation.
"""

from __future__ import annotations

import time
import typing
from dataclasses import dataclass, field

import jax
import numpy as np

from metadisco.core.coerce import check_int
from metadisco.core.errors import UserError, shorten
from metadisco.core.schema import Settings
from metadisco.core.stats import seed_mean, stat_block
from metadisco.envs import devices_for_env
from metadisco.parallel import sharding
from metadisco.parallel.cost import CallPlan, plan_call
from metadisco.runs.seeds import resolve_config, runs_program, seed_keys
from metadisco.trainers.base import Metrics
from metadisco.trainers.config import TrainConfig, config_to_dict, train_settings
from metadisco.trainers.hyper import hyper_of, stack, static_of, with_values
from metadisco.trainers.hyper_space import (
    Dimension,
    grid_points,
    parse_space,
    random_points,
    space_section,
    space_to_plain,
)
from metadisco.trainers.metrics import diverged, learning_curve, reduce_fitness

SEARCHES = ("grid", "random")
MAX_RUNS = 1 << 20  # points x seeds: a sweep is one array axis


@dataclass(frozen=True)
class SweepConfig:
    env: str
    space: dict  # setting -> range or values, checked by `resolve` against the trainer config
    objective: str = "ppo"
    search: str = "grid"
    num: int = 5
    seeds: int = 4
    seed: int = 0
    timesteps: int | None = None
    preset: str | None = None
    train: Settings = field(default_factory=Settings)

    PARSERS: typing.ClassVar = {"train": train_settings, "space": space_section}

    def resolve(self) -> tuple[TrainConfig, tuple[Dimension, ...], list[dict[str, float]]]:
        """(trainer config, space, points), every value checked; a `UserError` names the first bad one."""
        if self.search not in SEARCHES:
            raise UserError(f"search must be one of {', '.join(SEARCHES)}, got {shorten(self.search)}")
        check_int("num", self.num, 1, MAX_RUNS)
        check_int("seeds", self.seeds, 1, MAX_RUNS)
        check_int("seed", self.seed, 0, 2**32 - 1)
        try:
            config = resolve_config(self.env, self.preset, self.train, self.timesteps)
        except UserError as e:
            raise UserError(f"train: {e}") from None
        space = parse_space(self.space, config)
        if self.search == "grid":
            points = grid_points(space, self.num)
        else:
            points = random_points(space, self.num, np.random.default_rng([self.seed, 0x5EED]))
        if len(points) * self.seeds > MAX_RUNS:
            raise UserError(f"{len(points):,} points x {self.seeds} seeds = {len(points) * self.seeds:,} runs; at "
                            f"most {MAX_RUNS:,} in one sweep (lower num or seeds)")
        return config, space, points

    def to_plain(self) -> dict:
        out = {k: getattr(self, k) for k in ("env", "objective", "search", "num", "seeds", "seed", "timesteps",
                                              "preset")}
        return {**out, "train": self.train.to_plain(), "space": self.space}


@dataclass
class SweepResult:
    config: TrainConfig  # the base trainer config (the searched settings at their preset values)
    space: tuple[Dimension, ...]
    points: list[dict[str, float]]
    metrics: Metrics  # numpy leaves [P, S, num_updates]
    final_return: np.ndarray  # [P, S], NaN where a run diverged or finished no episode
    diverged: np.ndarray  # [P, S] bool
    seconds: float  # the one compiled call, compilation included
    devices: int


def sweep_program(cfg: SweepConfig, devices=None) -> tuple:
    """(fn, placed args, runs, config, space, points) of the sweep's one compiled call: every point x seed,
    sharded over `devices` (default: every device of this process)."""
    from metadisco.objectives.resolve import resolve_objective

    config, space, points = cfg.resolve()
    objective, meta = resolve_objective(cfg.objective)
    num_points, num_seeds = len(points), cfg.seeds
    hypers = [hyper_of(with_values(config, p, "space")) for p in points]
    runs = num_points * num_seeds  # run p * S + s: point p, seed s
    run_hypers = stack([h for h in hypers for _ in range(num_seeds)])
    keys = np.asarray(seed_keys(num_seeds, cfg.seed))
    run_keys = np.tile(keys, (num_points,) + (1,) * (keys.ndim - 1))
    local = devices_for_env(cfg.env, jax.local_devices() if devices is None else devices)
    used = tuple(sharding.devices_for(runs, local))
    in_axes = (0, None, 0)
    fn = runs_program(static_of(config), cfg.env, objective, used, in_axes)
    return fn, sharding.place((run_keys, meta, run_hypers), used, in_axes), runs, config, space, points


def plan_sweep(cfg: SweepConfig, devices=None) -> list[CallPlan]:
    """The sweep's one call, compiled and costed (`--dry-run`): nothing is trained."""
    fn, args, runs, config, _, _ = sweep_program(cfg, devices)
    return [plan_call(f"sweep: {runs // cfg.seeds} points x {cfg.seeds} seeds", fn, args, runs,
                      runs * config.num_updates * config.batch_size)]


def run_sweep(cfg: SweepConfig, devices=None) -> SweepResult:
    """Train every point of the sweep on every seed in one compiled call, sharded over `devices` (default: every
    device of this process)."""
    fn, args, runs, config, space, points = sweep_program(cfg, devices)
    num_points, num_seeds = len(points), cfg.seeds
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    seconds = time.perf_counter() - start
    metrics = jax.tree.map(lambda x: x.reshape(num_points, num_seeds, *x.shape[1:]), sharding.gather(out, runs))
    returns = np.asarray(reduce_fitness("final_return", metrics, config.final_window))
    used = len(jax.tree.leaves(args[0])[0].sharding.device_set)
    return SweepResult(config, space, points, metrics, returns, np.asarray(diverged(metrics)), seconds, used)


def summarise(cfg: SweepConfig, result: SweepResult, curve_points: int = 50) -> dict:
    """sweep.json: per point its settings, per-seed final returns, mean / IQM / bootstrap CI of the IQM, and a
    learning curve (mean over seeds); the best point by IQM (ties: the first)."""
    config = result.config
    entries = []
    for p, point in enumerate(result.points):
        steps, curves = learning_curve(result.metrics.episode_return[p], result.metrics.episode_count[p],
                                       config.batch_size, curve_points)
        curve = seed_mean(curves, 0, diverged="fail")
        entries.append({"hyper": point, "final_return": result.final_return[p].tolist(),
                        "diverged_seeds": int(result.diverged[p].sum()),
                        **stat_block(result.final_return[p], cfg.seed), "curve": curve.tolist()})
    iqms = np.array([e["iqm"] if e["iqm"] is not None else -np.inf for e in entries])
    best = int(np.argmax(iqms))
    runs = len(result.points) * cfg.seeds
    env_steps = runs * config.num_updates * config.batch_size
    return {
        "env": cfg.env, "objective": cfg.objective, "search": cfg.search, "seeds": cfg.seeds, "seed": cfg.seed,
        "timesteps": config.num_updates * config.batch_size, "space": space_to_plain(result.space),
        "points": entries, "curve_env_steps": steps.tolist(),
        "best": {"index": best, "hyper": result.points[best], "iqm": entries[best]["iqm"],
                 "ci95": entries[best]["ci95"], "mean": entries[best]["mean"]},
        "runs": runs, "compiled_calls": 1, "devices": result.devices, "seconds": result.seconds,
        "steps_per_second": env_steps / result.seconds,
        "config": config_to_dict(static_of(config)),
    }


def render_markdown(summary: dict) -> str:
    """sweep.md: one row per point, the best marked."""
    names = list(summary["space"])
    lines = [f"# Sweep on {summary['env']} ({summary['objective']}, {summary['search']})", "",
             f"{summary['seeds']} seeds per point, {summary['timesteps']:,} env steps each; score = final return "
             "(mean return of the episodes in the last 5% of updates); IQM with a 95% bootstrap CI.", "",
             "| " + " | ".join([*names, "mean", "IQM", "95% CI", "diverged"]) + " |",
             "|" + "---|" * (len(names) + 4)]
    for i, e in enumerate(summary["points"]):
        ci = f"[{e['ci95'][0]:.1f}, {e['ci95'][1]:.1f}]" if e["ci95"] else "n/a"
        mark = " **best**" if i == summary["best"]["index"] else ""
        cells = [f"{e['hyper'][n]:.4g}" for n in names]
        mean = f"{e['mean']:.1f}" if e["mean"] is not None else "n/a"
        iqm = f"{e['iqm']:.1f}{mark}" if e["iqm"] is not None else "n/a"
        lines.append("| " + " | ".join([*cells, mean, iqm, ci, str(e["diverged_seeds"])]) + " |")
    return "\n".join(lines) + "\n"
