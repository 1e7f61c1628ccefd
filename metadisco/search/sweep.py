"""Hyperparameter sweeps: a grid or random search over traced settings, every point x seed in ONE compiled call.

    env: CartPole-v1
    objective: ppo            # built-in name, objective file or meta-training run directory
    search: grid              # grid | random
    num: 9                    # grid: points per range (lists give their own); random: points in all
    seeds: 8
    timesteps: 100000
    train: {num_envs: 4}      # fixed settings (TrainConfig fields); preset: as `metadisco train`
    space: {lr: {low: 1.0e-5, high: 1.0e-1}}   # `metadisco.trainers.hyper_space`
    chunk: 4                  # optional: points per compiled call (default: all of them, one call)
    score: final_return       # or eval_return: deterministic episodes (needs train: {eval_episodes: N})

Because the searched settings are traced (`metadisco.trainers.hyper`), the P points x S seeds are P * S runs of one
program (`train_seeds.runs_program`, a hyper per run), sharded over the devices and vmapped on each. Every point
trains on the same S seed keys (`seed_keys(S, seed)`: common random numbers, as `evaluate` does between
methods), so differences between points are not differences of luck in initialisation.

With `chunk`, the points are trained `chunk` at a time, each chunk a call whose results are a cell written as it
finishes (`metadisco.core.cells`): `metadisco sweep ... --resume` trains only the missing chunks and writes the
files an uninterrupted run with the same chunks writes. Without it the whole sweep is one call (one cell).

`score` is what the statistics and the best point rank: the final return (the mean return of the episodes in the
last 5% of updates), or `eval_return`, each trained agent's deterministic episodes (DiscoBench's and OPEN's
score; the config's `train: {eval_episodes: N}` sets how many). The final return is recorded either way.
"""

from __future__ import annotations

import time
import typing
from dataclasses import dataclass, field

import jax
import numpy as np

from metadisco.core.cells import pack_array, unpack_array
from metadisco.core.coerce import check_int
from metadisco.core.errors import UserError, shorten
from metadisco.core.schema import Settings
from metadisco.core.stats import seed_mean, stat_block
from metadisco.core.streams import SWEEP_RANDOM_STREAM
from metadisco.envs import devices_for_env
from metadisco.parallel import sharding
from metadisco.parallel.cost import CallPlan, plan_call
from metadisco.runs.seeds import resolve_config, runs_program, seed_keys
from metadisco.trainers.base import EpisodeCurves
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
from metadisco.trainers.metrics import SCORE_WORDS, diverged, learning_curve, reduce_fitness

SEARCHES = ("grid", "random")
SCORES = ("final_return", "eval_return")  # what a sweep records per seed (`trainers.metrics.SCORE_WORDS`)
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
    chunk: int | None = None  # points per compiled call (None: every point in one call)
    score: str = "final_return"  # what ranks the points (SCORES)

    PARSERS: typing.ClassVar = {"train": train_settings, "space": space_section}

    def resolve(self) -> tuple[TrainConfig, tuple[Dimension, ...], list[dict[str, float]]]:
        """(trainer config, space, points), every value checked; a `UserError` names the first bad one."""
        if self.search not in SEARCHES:
            raise UserError(f"search must be one of {', '.join(SEARCHES)}, got {shorten(self.search)}")
        check_int("num", self.num, 1, MAX_RUNS)
        check_int("seeds", self.seeds, 1, MAX_RUNS)
        check_int("seed", self.seed, 0, 2**32 - 1)
        if self.chunk is not None:
            check_int("chunk", self.chunk, 1, MAX_RUNS)
        if self.score not in SCORES:
            raise UserError(f"score must be one of {', '.join(SCORES)}, got {shorten(self.score)}")
        try:
            config = resolve_config(self.env, self.preset, self.train, self.timesteps)
        except UserError as e:
            raise UserError(f"train: {e}") from None
        if self.score == "eval_return" and not config.eval_episodes:
            raise UserError("score eval_return needs deterministic episodes: set train: {eval_episodes: N} "
                            "(DiscoBench and OPEN play 16)")
        space = parse_space(self.space, config)
        if self.search == "grid":
            points = grid_points(space, self.num)
        else:
            points = random_points(space, self.num, np.random.default_rng([self.seed, SWEEP_RANDOM_STREAM]))
        if len(points) * self.seeds > MAX_RUNS:
            raise UserError(f"{len(points):,} points x {self.seeds} seeds = {len(points) * self.seeds:,} runs; at "
                            f"most {MAX_RUNS:,} in one sweep (lower num or seeds)")
        return config, space, points

    def to_plain(self) -> dict:
        out = {k: getattr(self, k) for k in ("env", "objective", "search", "num", "seeds", "seed", "timesteps",
                                              "preset")}
        if self.chunk is not None:
            out["chunk"] = self.chunk
        if self.score != "final_return":  # the default stays out: older sweeps' records are unchanged
            out["score"] = self.score
        return {**out, "train": self.train.to_plain(), "space": self.space}


@dataclass
class SweepResult:
    config: TrainConfig  # the base trainer config (the searched settings at their preset values)
    space: tuple[Dimension, ...]
    points: list[dict[str, float]]
    metrics: EpisodeCurves  # numpy leaves [P, S, num_updates]
    final_return: np.ndarray  # [P, S], NaN where a run diverged or finished no episode
    diverged: np.ndarray  # [P, S] bool
    eval_return: np.ndarray | None  # [P, S] deterministic episodes' mean return; None without eval_episodes
    seconds: float  # the compiled calls, compilation included
    devices: int
    calls: int = 1  # compiled calls (`SweepConfig.chunk`)


def sweep_program(cfg: SweepConfig, devices=None, points: list[dict[str, float]] | None = None) -> tuple:
    """(fn, placed args, runs, config, space, points) of one compiled call: every point (default: all of the
    sweep's) x seed, sharded over `devices` (default: every device of this process)."""
    from metadisco.objectives.resolve import resolve_objective

    config, space, every_point = cfg.resolve()
    points = every_point if points is None else points
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


def _train_chunk(cfg: SweepConfig, devices, points: list[dict[str, float]]) -> dict:
    """One compiled call: `points` x the sweep's seeds; a cell record (`metadisco.core.cells`)."""
    fn, args, runs, config, _, _ = sweep_program(cfg, devices, points)
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    seconds = time.perf_counter() - start
    metrics = jax.tree.map(lambda x: x.reshape(len(points), cfg.seeds, *x.shape[1:]), sharding.gather(out, runs))
    record = {"episode_return": pack_array(metrics.episode_return),
              "episode_count": pack_array(metrics.episode_count),
              "final_return": pack_array(reduce_fitness("final_return", metrics, config.final_window)),
              "diverged": pack_array(diverged(metrics)), "seconds": seconds,
              "devices": len(jax.tree.leaves(args[0])[0].sharding.device_set)}
    if metrics.eval_return is not None:
        record["eval_return"] = pack_array(reduce_fitness("eval_return", metrics, config.final_window))
    return record


def run_sweep(cfg: SweepConfig, devices=None, store=None) -> SweepResult:
    """Train every point of the sweep on every seed, `cfg.chunk` points per compiled call (default: all in one),
    sharded over `devices` (default: every device of this process). `store` (a `metadisco.core.cells.CellStore`,
    optional) keeps each call's results as it finishes and gives back those it holds instead of training them."""
    config, space, points = cfg.resolve()
    size = cfg.chunk or len(points)
    records = []
    for start in range(0, len(points), size):
        key = f"points {start}-{min(start + size, len(points)) - 1}"
        if store is not None and key in store:
            records.append(store.get(key))
            continue
        record = _train_chunk(cfg, devices, points[start:start + size])
        if store is not None:
            store.put(key, record)
            record = store.get(key)  # as a resumed run reads it
        records.append(record)
    names = ["episode_return", "episode_count", "final_return", "diverged"]
    names += ["eval_return"] if config.eval_episodes else []
    joined = {name: np.concatenate([unpack_array(r[name]) for r in records]) for name in names}
    curves = EpisodeCurves(joined["episode_return"], joined["episode_count"])
    return SweepResult(config, space, points, curves, joined["final_return"], joined["diverged"],
                       joined.get("eval_return"), float(sum(r["seconds"] for r in records)),
                       max(int(r["devices"]) for r in records), len(records))


def summarise(cfg: SweepConfig, result: SweepResult, curve_points: int = 50) -> dict:
    """sweep.json: per point its settings, per-seed final returns (and deterministic episodes' returns when
    played), mean / IQM / bootstrap CI of the IQM of the sweep's `score`, and a learning curve (mean over seeds);
    the best point by that IQM (ties: the first)."""
    config = result.config
    scores = result.eval_return if cfg.score == "eval_return" else result.final_return
    entries = []
    for p, point in enumerate(result.points):
        steps, curves = learning_curve(result.metrics.episode_return[p], result.metrics.episode_count[p],
                                       config.batch_size, curve_points)
        curve = seed_mean(curves, 0, diverged="fail")
        played = {} if result.eval_return is None else {"eval_return": result.eval_return[p].tolist()}
        entries.append({"hyper": point, "final_return": result.final_return[p].tolist(), **played,
                        "diverged_seeds": int(result.diverged[p].sum()),
                        **stat_block(scores[p], cfg.seed), "curve": curve.tolist()})
    iqms = np.array([e["iqm"] if e["iqm"] is not None else -np.inf for e in entries])
    best = int(np.argmax(iqms))
    runs = len(result.points) * cfg.seeds
    env_steps = runs * config.num_updates * config.batch_size
    return {
        "env": cfg.env, "objective": cfg.objective, "search": cfg.search, "seeds": cfg.seeds, "seed": cfg.seed,
        "score": cfg.score,
        "timesteps": config.num_updates * config.batch_size, "space": space_to_plain(result.space),
        "points": entries, "curve_env_steps": steps.tolist(),
        "best": {"index": best, "hyper": result.points[best], "iqm": entries[best]["iqm"],
                 "ci95": entries[best]["ci95"], "mean": entries[best]["mean"]},
        "runs": runs, "compiled_calls": result.calls, "devices": result.devices, "seconds": result.seconds,
        "steps_per_second": env_steps / result.seconds,
        "config": config_to_dict(static_of(config)),
    }


def render_markdown(summary: dict) -> str:
    """sweep.md: one row per point, the best marked."""
    names = list(summary["space"])
    lines = [f"# Sweep on {summary['env']} ({summary['objective']}, {summary['search']})", "",
             f"{summary['seeds']} seeds per point, {summary['timesteps']:,} env steps each; score = "
             f"{SCORE_WORDS[summary.get('score', 'final_return')]}; IQM with a 95% bootstrap CI.", "",
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
