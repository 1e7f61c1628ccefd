"""The PBT loop: N agents train `ready.updates` updates at once, then the weak copy the strong and explore.

    state = init(keys [N], meta, hypers [N])           # one program; agents sharded over devices, vmapped on each
    for round r:
        state, metrics = step(state, k)                 # one program, every agent k updates
        scores = mean return of the episodes each agent finished in the round          [N]
        parents = exploit(rng_r, scores); hypers = explore(rng_r, hypers, copied)      (host, numpy)
        state = state[parents] with the new hypers; each agent keeps its own PRNG key

A copy takes all of its parent's agent: parameters, optimiser state (Adam's moments and step count), settings,
and environment state (mid-episode, with any normalisation statistics), but not its key, so it then diverges.
The state goes to the host every round (exploit is a gather there), which is also what a checkpoint stores:
a run resumed from round r's checkpoint continues bit for bit as the uninterrupted run did.

Run directory (`metadisco.runs.rundir.RunDir`, as `meta-train`'s):
    config.yaml, devices.json
    metrics.jsonl    per round: scores [N], settings used [N], parents [N], best agent, env steps, seconds
    lineage.json     per round: parents and settings (what pbt.png draws); rewritten every round
    checkpoints/     gen_NNNNNN.msgpack (`metadisco.core.checkpoint`; NNNNNN = rounds done): the population
    summary.json     the best agent at the end: its final return, settings, and the schedule it inherited
    pbt.png          settings and returns of every agent over training, the best agent's ancestry in bold
"""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np
import yaml

from metadisco.core import checkpoint as ckpt_lib
from metadisco.core.errors import UserError
from metadisco.core.schema import from_plain, plain_data
from metadisco.core.streams import PBT_INIT_STREAM
from metadisco.envs import devices_for_env
from metadisco.parallel import sharding
from metadisco.parallel.cost import CallPlan, plan_call
from metadisco.runs.migrate import CONFIG_SCHEMA, read_config_schema
from metadisco.runs.rundir import CHECKPOINTS, RunDir
from metadisco.runs.seeds import seed_keys
from metadisco.search.pbt import strategies
from metadisco.search.pbt.config import PBTConfig
from metadisco.trainers import make_trainer
from metadisco.trainers.base import Trainer, TrainState
from metadisco.trainers.config import TrainConfig
from metadisco.trainers.hyper import hyper_of, stack, static_of, with_values
from metadisco.trainers.hyper_space import random_points

LINEAGE = "lineage.json"
SUMMARY = "summary.json"
FIGURE = "pbt.png"


@functools.lru_cache(maxsize=8)
def _programs(static: TrainConfig, env_id: str, objective, devices: tuple, updates: int):
    """(init, step) over a leading agent axis split over `devices`: init(keys, meta, hypers) -> states,
    step(states) -> (states, metrics [N, updates])."""
    from metadisco.envs import make_env

    trainer: Trainer = make_trainer(static, make_env(env_id), objective)
    init = sharding.shard_runs(trainer.init, devices, (0, None, 0))
    step = sharding.shard_runs(lambda state: trainer.step(state, updates), devices, (0,))
    return init, step


def round_scores(metrics) -> np.ndarray:
    """[N, k] per-update metrics -> [N]: the mean return of the episodes each agent finished in the round (each
    update's mean weighted by its episode count); NaN for an agent that finished none."""
    counts = np.asarray(metrics.episode_count, np.float64)
    sums = np.where(counts > 0, np.nan_to_num(np.asarray(metrics.episode_return, np.float64)) * counts, 0.0)
    total = counts.sum(axis=1)
    return np.where(total > 0, sums.sum(axis=1) / np.maximum(total, 1), np.nan)


def take_rows(state: TrainState, parents: np.ndarray, values: dict[str, np.ndarray]) -> TrainState:
    """Host state with agent i replaced by agent parents[i] (its own key kept) and the searched settings set."""
    copied = jax.tree.map(lambda x: np.asarray(x)[parents], state._replace(key=None))
    hyper = copied.hyper._replace(**{k: np.asarray(v, np.float32) for k, v in values.items()})
    return copied._replace(key=np.asarray(state.key), hyper=hyper)


@dataclass
class PBTResult:
    rounds: int
    scores: np.ndarray  # [N]: the last round's returns
    best_agent: int
    best_return: float
    lines: list[dict]


class PBT:
    """A PBT run of `cfg` over `devices` (default: every device of this process)."""

    def __init__(self, cfg: PBTConfig, devices=None):
        from metadisco.objectives.resolve import resolve_objective

        self.cfg = cfg
        self.config, self.space, self.rounds = cfg.resolve()
        self.objective, self.meta = resolve_objective(cfg.objective)
        n = cfg.population
        local = devices_for_env(cfg.env, jax.local_devices() if devices is None else devices)
        self.devices = tuple(sharding.devices_for(n, local))
        self._init, self._step = _programs(static_of(self.config), cfg.env, self.objective, self.devices,
                                           cfg.ready.updates)
        points = random_points(self.space, n, np.random.default_rng([cfg.seed, PBT_INIT_STREAM]))
        self.initial_hypers = stack([hyper_of(with_values(self.config, p, "space")) for p in points])
        self.key = np.asarray(jax.random.PRNGKey(cfg.seed))
        self.steps_per_round = n * cfg.ready.updates * self.config.batch_size

    def init(self) -> TrainState:
        """The population before training (host)."""
        n = self.cfg.population
        args = sharding.place((np.asarray(seed_keys(n, self.cfg.seed)), self.meta, self.initial_hypers),
                              self.devices, (0, None, 0))
        return sharding.gather(self._init(*args), n)

    def plan(self) -> list[CallPlan]:
        """The run's two calls, compiled and costed (`--dry-run`): the initial population (made here: it trains
        nothing) and one round, made `rounds` times."""
        n = self.cfg.population
        args = sharding.place((np.asarray(seed_keys(n, self.cfg.seed)), self.meta, self.initial_hypers),
                              self.devices, (0, None, 0))
        init = plan_call("pbt: the initial population", self._init, args, n, 0)
        state = sharding.gather(self._init(*args), n)
        step = plan_call(f"pbt: one round ({self.cfg.ready.updates} updates)", self._step,
                         sharding.place((state,), self.devices, (0,)), n, self.steps_per_round, self.rounds)
        return [init, step]

    def step(self, state: TrainState):
        """(state, metrics [N, k]) after k updates of every agent (host in, host out)."""
        n = self.cfg.population
        new, metrics = self._step(*sharding.place((state,), self.devices, (0,)))
        return sharding.gather(new, n), sharding.gather(metrics, n)

    def select(self, round_index: int, state: TrainState, scores: np.ndarray):
        """(state, parents): exploit and explore after round `round_index` (0-based)."""
        ex, ep = self.cfg.exploit, self.cfg.explore
        rng = np.random.default_rng([self.cfg.seed, round_index])
        parents = strategies.exploit(ex.kind, rng, scores, ex.fraction)
        copied = parents != np.arange(len(parents))
        values = {d.name: np.asarray(getattr(state.hyper, d.name), np.float64)[parents] for d in self.space}
        values = strategies.explore(ep.kind, rng, values, copied, self.space, ep.factors, ep.resample_probability)
        return take_rows(state, parents, values), parents

    def to_yaml(self) -> str:
        """The run directory's config.yaml: its schema version, then the config (`metadisco.runs.migrate`)."""
        return yaml.safe_dump({"schema": CONFIG_SCHEMA, **plain_data(self.cfg)}, sort_keys=False,
                              default_flow_style=None)


def _as_written_now(data) -> dict:
    """A PBT run's stored config.yaml of any version as this version writes its config (what a resume compares)."""
    return plain_data(from_plain(PBTConfig, read_config_schema(data, "the run's config.yaml")))


def _lineage(lines: list[dict]) -> dict:
    """lineage.json from the metrics lines: per round the parents (after it) and the settings (during it)."""
    return {"rounds": len(lines), "env_steps": [line["env_steps"] for line in lines],
            "scores": [line["scores"] for line in lines], "parents": [line["parents"] for line in lines],
            "hyper": {name: [line["hyper"][name] for line in lines] for name in (lines[0]["hyper"] if lines else {})}}


def ancestry(lineage: dict, agent: int) -> list[int]:
    """The agent whose weights `agent` carried in each round, first round first (following copies back)."""
    path = [agent]
    for parents in reversed(lineage["parents"][:-1]):  # parents after round r choose who trains in round r + 1
        path.append(parents[path[-1]])
    return path[::-1]


def run_pbt(cfg: PBTConfig, out: str | Path | None, resume: bool = False, devices=None, say=None,
            plot: bool = True, progress: bool = True, track=None) -> PBTResult:
    """Run (or resume) PBT into the run directory `out` (None: nothing written); `say` gets a line per round
    when `progress`, and the run directory's notes always; `track` (`metadisco.runs.tracking.Tracking`), if
    given, each round's metrics line at step = round."""
    say = say or (lambda message: None)
    # Only process 0 of a multi-process run writes; every process reads a checkpoint to resume from.
    run_dir = RunDir(out, say=say, writer=jax.process_index() == 0) if out is not None else None
    with run_dir.writing() if run_dir is not None else contextlib.nullcontext():  # one writer per directory
        return _run_pbt(cfg, run_dir, resume, devices, say, plot, progress, track)


def _run_pbt(cfg: PBTConfig, run_dir: RunDir | None, resume: bool, devices, say, plot: bool, progress: bool,
             track) -> PBTResult:
    pbt = PBT(cfg, devices)
    config_yaml = pbt.to_yaml()
    digest = ckpt_lib.config_digest(config_yaml)
    mesh = sharding.mesh_of(pbt.devices)
    ckpt = run_dir.resume_point(resume, config_yaml, plain_data(cfg), mesh, upgrade=_as_written_now) \
        if run_dir else None
    state = pbt.init()
    lines: list[dict] = []
    start = 0
    if ckpt is not None:
        if not np.array_equal(ckpt.key, pbt.key):
            raise UserError(f"the checkpoint in {run_dir.path} was made with another seed")
        state = ckpt_lib.restore_state(state, ckpt, f"checkpoint in {run_dir / CHECKPOINTS}")
        state = jax.tree.map(np.asarray, state)
        start = ckpt.generation
        run_dir.truncate_metrics(ckpt.metrics_lines)
        lines = run_dir.read_metrics() if ckpt.metrics_lines else []
    elif run_dir is not None:
        run_dir.start_fresh()
    if run_dir is not None:
        run_dir.write_config(config_yaml, mesh)

    def checkpoint(rounds_done: int) -> None:
        leaves = jax.tree.leaves(state)
        run_dir.save_checkpoint(ckpt_lib.Checkpoint(rounds_done, pbt.key, leaves, {}, rounds_done,
                                                    rounds_done * pbt.steps_per_round, digest))

    if run_dir is not None and ckpt is None:
        checkpoint(0)
    scores = np.asarray(lines[-1]["scores"], np.float64) if lines else np.full(cfg.population, np.nan)
    for r in range(start, pbt.rounds):
        t0 = time.perf_counter()
        used = {name: np.asarray(value, np.float64).tolist() for name, value in state.hyper._asdict().items()
                if name in {d.name for d in pbt.space}}
        state, metrics = pbt.step(state)
        scores = round_scores(metrics)
        last = r + 1 == pbt.rounds
        if last:
            parents = np.arange(cfg.population)
        else:
            state, parents = pbt.select(r, state, scores)
        best = int(np.argmax(strategies.rank_scores(scores)))
        line = {"round": r + 1, "env_steps": (r + 1) * pbt.steps_per_round,
                "scores": [None if not np.isfinite(s) else float(s) for s in scores], "hyper": used,
                "parents": parents.tolist(), "best_agent": best,
                "best_return": float(scores[best]) if np.isfinite(scores[best]) else None,
                "seconds": time.perf_counter() - t0}
        lines.append(line)
        if progress:
            say(f"round {r + 1}/{pbt.rounds}: best return {line['best_return']}, agent {best} "
                f"({', '.join(f'{k}={v[best]:.3g}' for k, v in used.items())}), "
                f"{int((parents != np.arange(cfg.population)).sum())} copied")
        if run_dir is not None:
            run_dir.append_metrics(line)
            run_dir.write_json(LINEAGE, _lineage(lines))
            checkpoint(r + 1)
        if track is not None:
            track.log(r + 1, line)
    best = int(np.argmax(strategies.rank_scores(scores)))
    result = PBTResult(len(lines), scores, best, float(scores[best]), lines)
    if run_dir is not None and lines:
        lineage = _lineage(lines)
        path = ancestry(lineage, best)
        run_dir.write_json(SUMMARY, {
            "env": cfg.env, "population": cfg.population, "rounds": len(lines),
            "env_steps_per_agent": len(lines) * cfg.ready.updates * pbt.config.batch_size,
            "env_steps": lines[-1]["env_steps"], "exploit": cfg.exploit.kind, "explore": cfg.explore.kind,
            "best_agent": best, "best_return": result.best_return, "final_scores": lines[-1]["scores"],
            "best_schedule": {name: [lineage["hyper"][name][r][a] for r, a in enumerate(path)]
                              for name in lineage["hyper"]},
            "best_ancestry": path, "devices": len(pbt.devices)})
        if plot:
            from metadisco.figures.pbt import plot_pbt

            plot_pbt(lineage, path, f"{cfg.env}: PBT, {cfg.population} agents ({cfg.exploit.kind} / "
                     f"{cfg.explore.kind})", run_dir / FIGURE)
    return result
