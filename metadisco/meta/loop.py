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

from metadisco.config import TrainConfig
from metadisco.errors import UserError
from metadisco.fitness import FITNESS_FNS, final_return, to_minimise
from metadisco.io import atomic_write_bytes, atomic_write_text, read_yaml, to_jsonable
from metadisco.meta import checkpoint as ckpt_lib
from metadisco.meta import distributed as dist
from metadisco.meta.config import MetaConfig, TaskConfig, parse_config
from metadisco.meta.start import start_point
from metadisco.meta.strategy import Strategy, make_strategy
from metadisco.objectives import BUILTIN_OBJECTIVES, Objective

EVAL_STREAM = 0x7FFFFFFF  # fold_in tags of key streams that generations (0, 1, ...) never reach
START_STREAM = 0x7FFFFFFE
INIT_STREAM = 0x7FFFFFFD


# ---------------------------------------------------------------------------------------------------------
# tasks: one compiled population evaluator each


@dataclass
class Task:
    cfg: TaskConfig
    train_config: TrainConfig
    evaluate: Any  # jitted (population [P], keys [P, S, 2]) -> returns [P, S], replicated
    steps_per_run: int


def make_evaluator(train, fitness_name: str, train_config: TrainConfig, mesh):
    """(population, keys [P, S, 2]) -> returns [P, S]: members split over the mesh (shard_map), each device
    training its P / n members x S seeds with vmap; the result is gathered on every device."""
    fitness_fn = FITNESS_FNS[fitness_name]
    window = train_config.final_window

    def run_fitness(key, meta):
        metrics = train(key, meta).metrics
        return final_return(metrics, window) if fitness_fn is final_return else fitness_fn(metrics)

    def local(population, keys):  # this device's members
        return jax.vmap(lambda meta, k: jax.vmap(run_fitness, (0, None))(k, meta))(population, keys)

    spec = jax.sharding.PartitionSpec(dist.AXIS)
    sharded = jax.shard_map(local, mesh=mesh, in_specs=(spec, spec), out_specs=spec, check_vma=False)
    return jax.jit(sharded, out_shardings=dist.replicated(mesh))


# (train config, env, objective, fitness, mesh) -> evaluator: runs in one process (tests, benchmarks, a resume)
# reuse the traced and compiled program instead of building it again.
_EVALUATORS: dict = {}


def build_tasks(config: MetaConfig, objective: Objective, mesh) -> list[Task]:
    from metadisco.envs import make_env
    from metadisco.runs import resolve_config
    from metadisco.train import make_train

    tasks = []
    for i, cfg in enumerate(config.tasks):
        try:
            train_config = resolve_config(cfg.env, cfg.preset, cfg.overrides(), cfg.timesteps)
        except UserError as e:
            raise UserError(f"tasks.{i} ({cfg.env}): {e}") from None
        cache_key = (train_config, cfg.env, objective, config.fitness, mesh)
        if cache_key not in _EVALUATORS:
            train = make_train(train_config, make_env(cfg.env), objective)
            _EVALUATORS[cache_key] = make_evaluator(train, config.fitness, train_config, mesh)
        steps = train_config.num_updates * train_config.batch_size
        tasks.append(Task(cfg, train_config, _EVALUATORS[cache_key], steps))
    return tasks


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


class MetaRun:
    """One meta-training run into `out` (None: nothing written, e.g. in benchmarks)."""

    def __init__(self, config: MetaConfig, out: str | Path | None, resume: bool = False, mesh=None,
                 progress: bool = True):
        self.config = config
        self.out = Path(out) if out is not None else None
        self.resume = resume
        self.writer = dist.is_writer() and self.out is not None
        self.progress = progress and dist.is_writer()
        self.objective = Objective.from_spec(config.objective)
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
        self.tasks = build_tasks(self.config, self.objective, self.mesh)

    # -- keys -----------------------------------------------------------------------------------------

    def _generation_keys(self, generation: int):
        """(ask key, tell key, [per task: keys [P, S, 2]]): members share their seeds' keys."""
        P = self.config.strategy.population_size
        key = jax.random.fold_in(self.base_key, generation)
        ask_key, tell_key, train_key = jax.random.split(key, 3)
        task_keys = []
        for t, task in enumerate(self.tasks):
            seeds = jax.random.split(jax.random.fold_in(train_key, t), task.cfg.seeds)
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

    def _evaluate(self, population, task_keys) -> tuple[list[np.ndarray], np.ndarray]:
        """Train the population on every task: ([P, S] returns per task, fitness [P])."""
        returns = [dist.to_host(task.evaluate(population, dist.to_global(keys, self.mesh)))
                   for task, keys in zip(self.tasks, task_keys, strict=True)]
        fitness = combine([member_fitness(r) for r in returns], self.normalisers)
        return returns, fitness

    def evaluate_mean(self, es_state) -> float | None:
        """Fitness (higher is better) of the ES mean over P x S fresh seeds per task; None if all diverged."""
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
        if len(cfgs) == 1 and cfgs[0].baseline is None:
            return {}
        out = {}
        for task in self.tasks:
            env = task.cfg.env
            if task.cfg.baseline is not None:
                out[env] = float(task.cfg.baseline)
            elif env in cached:
                out[env] = float(cached[env])
            else:
                self._say(f"measuring the PPO baseline on {env} ({self.config.baseline_seeds} seeds)")
                ppo = BUILTIN_OBJECTIVES["ppo"]
                result = train_seeds(env, ppo, ppo.zero_meta(), task.train_config, self.config.baseline_seeds,
                                     self.config.seed)
                fn = FITNESS_FNS[self.config.fitness]
                values = np.asarray(final_return(result.metrics, task.train_config.final_window)
                                    if fn is final_return else fn(result.metrics))
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
        """Keep the first `lines` lines (those the checkpoint accounts for): a resumed run rewrites the rest."""
        path = self.out / "metrics.jsonl"
        kept = path.read_text().splitlines(keepends=True)[:lines] if path.is_file() else []
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
        if self.writer:
            atomic_write_text(self.out / "config.yaml", self.config_yaml)
            dist.record_devices(self.out, self.mesh)
            if self.normalisers_by_env:
                atomic_write_text(self.out / "baselines.json", json.dumps(self.normalisers_by_env, indent=2) + "\n")

        if start == 0 and "fitness_of_initial_mean" not in extra and config.generations > 0:
            self._say("evaluating the initial objective on fresh seeds (compiling first)")
            extra["fitness_of_initial_mean"] = self.evaluate_mean(es_state)
        if self.writer and ckpt is None:
            self._write_objective(dist.to_host(self._mean(es_state)))
            self._checkpoint(es_state, 0, env_steps, extra, metrics_lines=0)

        final = extra.get("fitness_of_final_mean") if start >= config.generations else None
        bar = self._progress_bar(start)
        for g in range(start, config.generations):
            t0 = time.perf_counter()
            ask_key, tell_key, task_keys = self._generation_keys(g)
            population, es_state = self._ask(dist.to_global(ask_key, self.mesh), es_state)
            jax.block_until_ready(population)
            t_ask = time.perf_counter() - t0
            t_eval = time.perf_counter()
            returns, fitness = self._evaluate(population, task_keys)
            t1 = time.perf_counter()
            t_eval = t1 - t_eval
            es_state = self._tell(dist.to_global(tell_key, self.mesh), population,
                                  dist.to_global(fitness.astype(np.float32), self.mesh), es_state)
            jax.block_until_ready(es_state)
            t_tell = time.perf_counter() - t1
            env_steps += sum(P * t.cfg.seeds * t.steps_per_run for t in self.tasks)
            line = {"generation": g, **summarise(fitness),
                    "returns": {t.cfg.env: summarise(member_fitness(r))["fitness_mean"]
                                for t, r in zip(self.tasks, returns, strict=True)}}
            if g == 0:
                line["fitness_of_initial_mean"] = extra.get("fitness_of_initial_mean")
            t_mean = time.perf_counter()
            if (g + 1) % config.eval_every == 0 or g + 1 == config.generations:
                line["fitness_of_mean"] = self.evaluate_mean(es_state)
                env_steps += sum(P * t.cfg.seeds * t.steps_per_run for t in self.tasks)
                if g + 1 == config.generations:
                    final = extra["fitness_of_final_mean"] = line["fitness_of_mean"]
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
            self._write_summary(extra, env_steps)
            self._plot()
        return RunResult(config.generations, extra.get("fitness_of_initial_mean"), final,
                         dist.to_host(self._mean(es_state)), self.timing)

    def _checkpoint(self, es_state, generation: int, env_steps: int, extra: dict, metrics_lines: int) -> None:
        leaves = jax.tree.leaves(dist.to_host(es_state))
        ckpt_lib.save(self.out / "checkpoints", ckpt_lib.Checkpoint(
            generation, self.base_key, leaves, self.normalisers_by_env, metrics_lines, env_steps, self.digest,
            {k: v for k, v in extra.items() if v is not None}))

    def _progress_bar(self, start: int):
        if not self.progress or self.config.generations == 0:
            return None
        from tqdm import tqdm

        return tqdm(total=self.config.generations, initial=start, desc="meta-train", unit="gen", file=sys.stderr,
                    dynamic_ncols=True)

    def _write_summary(self, extra: dict, env_steps: int) -> None:
        summary = {"generations": self.config.generations, "env_steps": env_steps,
                   "fitness_of_initial_mean": extra.get("fitness_of_initial_mean"),
                   "fitness_of_final_mean": extra.get("fitness_of_final_mean"),
                   "normalisers": self.normalisers_by_env, "objective": "objective.msgpack",
                   "devices": int(self.mesh.devices.size)}
        atomic_write_text(self.out / "summary.json", json.dumps(to_jsonable(summary), indent=2) + "\n")

    def _plot(self) -> None:
        path = self.out / "metrics.jsonl"
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []
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
