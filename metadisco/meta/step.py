"""One generation of meta-training: ask -> train every member on every task -> fitness -> tell.

With P members, T tasks and S seeds per member and task:

    population = ask(key_g, es_state)                       # meta-param pytree, leaves [P, ...]
    for each task t (tasks of different shapes run one after another, one compiled program each):
        returns_t = population_program_t(population, keys_t, hypers_t)  # [P, S]; members sharded over the mesh
    fitness = mean over tasks of (mean over seeds of returns_t) / |baseline_t|    # [P], higher is better
    told = fitness, or with `combine: rank` mean over tasks of centred ranks within each task   # [P]
    es_state = tell(key_g, population, to_minimise(told), es_state)

All members of a generation train with the same S keys (common random numbers: antithetic pairs differ only
in their perturbation). A member with a non-finite return on any seed (diverged) gets NaN fitness, which
`to_minimise` makes the worst. With `normalise: paired` PPO trains on the same seed keys in the same call and
each member scores 1 + (member - PPO) / ppo_gap per task (`metadisco.meta.paired`).

What the ES is told and what is reported are kept apart: `fitness` (metrics.jsonl's `fitness_*`) is always the
normalised mean over tasks; with `combine: rank` the ES is told the mean of the members' centred ranks within
each task instead (`metadisco.meta.fitness.mean_task_ranks`), so that every task counts equally in its ranking.

With a `hyper:` section the ES point is {"objective": meta-parameters, "hyper": {setting: units}}
(`metadisco.meta.hyper_search`): the population program trains each member's objective with its own
hyperparameters (the task's own values moved by the member's units), and the PPO control keeps the task's own.

Every key derives from (config.seed, generation), so a run resumed from a checkpoint repeats exactly what the
uninterrupted run would have done. The ES mean is scored on fresh seeds (a key stream training never uses, the
same at every evaluation, so evaluations pair), reusing the compiled population program.

`GenerationStep` holds the compiled pieces; the run directory, baselines, logging and callbacks live in
`metadisco.runs.rundir`, `metadisco.meta.baselines`, `metadisco.meta.callbacks` and `metadisco.meta.loop`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.core.errors import UserError
from metadisco.envs import ONE_DEVICE_WHY, runs_on_one_device
from metadisco.meta import paired
from metadisco.meta.config import MetaConfig
from metadisco.meta.fitness import mean_task_ranks, ppo_gap, to_minimise
from metadisco.meta.start import start_point
from metadisco.meta.strategy import Strategy, make_strategy
from metadisco.meta.tasks import Task, build_tasks, sample_tasks
from metadisco.parallel import hosts as dist
from metadisco.parallel.sharding import make_mesh

EVAL_STREAM = 0x7FFFFFFF  # fold_in tags of key streams that generations (0, 1, ...) never reach
START_STREAM = 0x7FFFFFFE
INIT_STREAM = 0x7FFFFFFD
VALIDATION_STREAM = 0x7FFFFFFC
REFERENCE_STREAM = 0x7FFFFFFB


# ---------------------------------------------------------------------------------------------------------
# fitness of a population


def member_fitness(returns: np.ndarray) -> np.ndarray:
    """[P, S] returns -> [P]: mean over seeds, NaN when any seed is not finite (diverged)."""
    returns = np.asarray(returns, np.float64)
    ok = np.all(np.isfinite(returns), axis=-1)
    return np.where(ok, np.mean(np.where(np.isfinite(returns), returns, 0.0), axis=-1), np.nan)


def scale(per_task: list[np.ndarray], normalisers: list[float | None]) -> list[np.ndarray]:
    """Each task's fitness [P] divided by the size of its normaliser (when it has one): the per-task scores of
    fixed normalisation.

    Dividing by |baseline| keeps the order of members on envs whose returns are negative (Acrobot, Pendulum),
    where dividing by the baseline itself would rank the worst member first."""
    return [f / abs(n) if n else f for f, n in zip(per_task, normalisers, strict=True)]


def combine(per_task: list[np.ndarray], normalisers: list[float | None]) -> np.ndarray:
    """Mean over tasks of each task's fitness divided by the size of its normaliser (`scale`): [P]."""
    return np.mean(np.stack(scale(per_task, normalisers)), axis=0)


def fitness_stats(fitness: np.ndarray) -> dict:
    """Mean, max, min and std of the finite fitness values of a generation, and how many were not finite."""
    finite = fitness[np.isfinite(fitness)]
    stats = {"fitness_mean": None, "fitness_max": None, "fitness_min": None, "fitness_std": None}
    if finite.size:
        stats = {"fitness_mean": float(finite.mean()), "fitness_max": float(finite.max()),
                 "fitness_min": float(finite.min()), "fitness_std": float(finite.std())}
    return {**stats, "nan_count": int(fitness.size - finite.size)}


def task_stats(tasks: list, scores: list[np.ndarray]) -> tuple[dict, dict]:
    """Per task of a generation (by name), the population mean and the std of the members' finite scores [P],
    in the units of `fitness` (None where no member has a finite score): which task moves the population and
    which spreads it (`task_fitness`, `task_spread` in metrics.jsonl)."""
    stats = {t.name: fitness_stats(np.asarray(s, np.float64)) for t, s in zip(tasks, scores, strict=True)}
    return ({name: st["fitness_mean"] for name, st in stats.items()},
            {name: st["fitness_std"] for name, st in stats.items()})


def _strong(tree):
    """Drop JAX's weak types (Python scalars inside the strategy) so state signatures never change."""
    return jax.tree.map(lambda x: jax.lax.convert_element_type(x, jnp.result_type(x)), tree)


# ---------------------------------------------------------------------------------------------------------
# the step


@dataclass(frozen=True)
class GenerationKeys:
    ask: np.ndarray  # [2]
    tell: np.ndarray  # [2]
    tasks: list[np.ndarray]  # per task of `GenerationStep.tasks_of(generation)`: [P, S, 2], shared by members


@dataclass(frozen=True)
class PopulationFitness:
    returns: list[np.ndarray]  # per task: [P, S] returns
    fitness: np.ndarray  # [P] the normalised mean over tasks (reported), higher is better; NaN: diverged member
    ppo: dict[str, float]  # paired normalisation: PPO's fitness per task name on the same keys (else empty)
    scores: list[np.ndarray]  # per task: [P] members' normalised scores, in the units of `fitness`
    told: np.ndarray  # [P] what the ES is told (higher is better): `fitness` itself, or with combine: rank the
    # mean over tasks of centred ranks (`metadisco.meta.fitness.mean_task_ranks`)


@dataclass(frozen=True)
class GenerationOutput:
    generation: int
    tasks: list[Task]  # the tasks this generation trained on
    population: Any  # the members asked for (device pytree, leaves [P, ...])
    returns: list[np.ndarray]
    fitness: np.ndarray  # reported: the normalised mean over tasks (`PopulationFitness.fitness`)
    ppo: dict[str, float]
    train_seconds: float  # training the population (the work itself)
    es_seconds: float  # ask + tell
    scores: list[np.ndarray]  # per task: [P] normalised scores
    told: np.ndarray  # [P] what the ES was told


class GenerationStep:
    """The compiled pieces of one meta-training config: ES strategy, tasks, keys, ask / train / tell.

    `step(es_state, generation, baselines) -> (es_state, GenerationOutput)` is a pure function of its
    arguments (every key comes from the config's seed and the generation number): ask, each task's population
    program and tell are jitted (sharded over `mesh`), and the fitness is combined on the host in float64.
    `metadisco.meta.loop.meta_train` calls it once a generation; a library user can drive it directly:

        from metadisco.meta.baselines import measure_baselines
        from metadisco.meta.load import parse_config
        from metadisco.meta.step import GenerationStep
        from metadisco.objectives.files import save_objective

        step = GenerationStep(parse_config(config_dict))
        baselines = measure_baselines(step)          # PPO scales / normalisers, as meta_train measures them
        state = step.init()
        for g in range(10):
            state, out = step(state, g, baselines)
            print(g, out.fitness.mean())
        meta, units = step.split(step.mean(state))   # units: None without a `hyper:` section
        save_objective("mine.msgpack", step.objective, meta)
    """

    def __init__(self, config: MetaConfig, mesh=None):
        self.config = config
        self.objective = config.objective
        self.paired = config.normalise == "paired"
        self.ranked = config.combine == "rank"
        self.base_key = np.asarray(jax.random.PRNGKey(config.seed))
        self.hyper = config.hyper  # the settings evolved with the objective (empty: none)
        start = self.hyper.point(start_point(self.objective, config.start,
                                             jax.random.fold_in(self.base_key, START_STREAM), config.start_scale))
        self.strategy: Strategy = make_strategy(config.strategy, start)
        self.mesh = mesh if mesh is not None else make_mesh()
        dist.check_population(config.strategy.population_size, self.mesh)
        strategy, rep = self.strategy, dist.replicated(self.mesh)
        P = self.population_size
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
        one_device = [t.env for t in (*config.tasks, *config.validation.tasks) if runs_on_one_device(t.env)]
        if one_device and self.mesh.devices.size > 1:
            raise UserError(f"task env {one_device[0]!r}: {ONE_DEVICE_WHY}; meta-train with --devices 1")
        self.task_lengths = build_tasks(config.tasks, self.objective, config.fitness, self.mesh)
        self.tasks: list[Task] = [t for lengths in self.task_lengths for t in lengths]  # every (env, length)
        self.valid_tasks: list[Task] = [t for lengths in build_tasks(
            config.validation.tasks, self.objective, config.fitness, self.mesh, "validation.tasks")
            for t in lengths]
        # PPO on the same seed keys: every learned piece at zero is the handcrafted baseline exactly, at each
        # task's own hyperparameters (units zero).
        self.control = self.hyper.point(self.objective.zero_meta())

    @property
    def population_size(self) -> int:
        return self.config.strategy.population_size

    @property
    def devices(self) -> int:
        return int(self.mesh.devices.size)

    # -- ES state -------------------------------------------------------------------------------------

    def init(self, key=None):
        """The strategy's initial state (device pytree, replicated), from the config's init key stream."""
        key = jax.random.fold_in(self.base_key, INIT_STREAM) if key is None else key
        return self._init(dist.to_global(key, self.mesh))

    def ask(self, key, es_state):
        """(population, es_state): the members to train, leaves [P, ...]."""
        return self._ask(dist.to_global(key, self.mesh), es_state)

    def tell(self, key, population, fitness: np.ndarray, es_state):
        """The new ES state from the population's fitness [P] (higher is better)."""
        return self._tell(dist.to_global(key, self.mesh), population,
                          dist.to_global(np.asarray(fitness).astype(np.float32), self.mesh), es_state)

    def mean(self, es_state):
        """The ES mean (host numpy pytree): the objective's meta-parameters, or with a `hyper:` section the ES
        point {"objective": meta-parameters, "hyper": units} (`split` parts them)."""
        return dist.to_host(self._mean(es_state))

    def split(self, point) -> tuple[Any, dict | None]:
        """(objective meta-parameters, hyper units {setting: value} or None) of an ES point or rows of them."""
        return self.hyper.split(point)

    def hyper_values(self, units) -> dict[str, dict[str, float]]:
        """The evolved settings of one ES point's `units` on every training and validation task, as its
        trainer gets them: {task name: {setting: value}}."""
        return {task.name: self.hyper.task_values(task.train_config, units)
                for task in self.tasks + self.valid_tasks}

    # -- keys -----------------------------------------------------------------------------------------

    def tasks_of(self, generation: int) -> list[Task]:
        """The tasks (env and training length) generation `generation` trains on."""
        key = jax.random.fold_in(self.base_key, generation)
        return sample_tasks(key, self.task_lengths, self.config.sampling.tasks_per_generation,
                            dict(self.config.sampling.scale))

    def keys(self, generation: int) -> GenerationKeys:
        """Keys of generation `generation`: members share their seeds' keys; a config task's seeds do not depend
        on which length it is drawn at."""
        P = self.population_size
        key = jax.random.fold_in(self.base_key, generation)
        ask_key, tell_key, train_key = jax.random.split(key, 3)
        task_keys = []
        for task in self.tasks_of(generation):
            seeds = jax.random.split(jax.random.fold_in(train_key, task.index), task.cfg.seeds)
            task_keys.append(np.broadcast_to(np.asarray(seeds), (P, *seeds.shape)))
        return GenerationKeys(np.asarray(ask_key), np.asarray(tell_key), task_keys)

    def population_rows(self) -> int:
        """Rows of the paired population program: P members, PPO, padding to the device count."""
        return paired.count_rows(self.population_size, self.devices)

    def fresh_keys(self, task: Task) -> np.ndarray:
        """Fresh seeds of a training task, [pairs, S, 2]: as many (meta, PPO) pairs as the population's
        rows hold, from a stream training never uses, the same at every evaluation (so evaluations pair)."""
        pairs = self.population_rows() // 2
        stream = jax.random.fold_in(jax.random.fold_in(self.base_key, EVAL_STREAM), task.index)
        stream = jax.random.fold_in(stream, task.timesteps)
        return np.asarray(jax.random.split(stream, pairs * task.cfg.seeds)).reshape(pairs, task.cfg.seeds, -1)

    def validation_keys(self, task: Task) -> np.ndarray:
        """The fixed validation seeds of a validation task: [1, S, 2] (one pair)."""
        stream = jax.random.fold_in(jax.random.fold_in(self.base_key, VALIDATION_STREAM), task.index)
        return np.asarray(jax.random.split(stream, task.cfg.seeds))[None]

    def reference_keys(self, task: Task) -> np.ndarray:
        """Seeds of PPO's reference score on a training task (paired normalisation's scale): [rows, S, 2]."""
        rows = self.population_rows()
        stream = jax.random.fold_in(jax.random.fold_in(self.base_key, REFERENCE_STREAM), task.index)
        keys = np.asarray(jax.random.split(jax.random.fold_in(stream, task.timesteps), rows * task.cfg.seeds))
        return keys.reshape(rows, task.cfg.seeds, -1)

    def _mean_keys(self) -> list[np.ndarray]:
        """Fresh seeds for the ES mean without paired normalisation: [P, S, 2] per task."""
        P = self.population_size
        stream = jax.random.fold_in(self.base_key, EVAL_STREAM)
        out = []
        for t, task in enumerate(self.tasks):
            keys = jax.random.split(jax.random.fold_in(stream, t), P * task.cfg.seeds)
            out.append(np.asarray(keys).reshape(P, task.cfg.seeds, -1))
        return out

    # -- fitness --------------------------------------------------------------------------------------

    def train_rows(self, task: Task, rows, keys) -> np.ndarray:
        """Run `task`'s population program on `rows` (ES points, device pytree, leaves [M, ...]) and host seed
        keys [M, S, 2]: returns [M, S] (host). With a `hyper:` section each row trains with the task's own
        hyperparameters moved by its units; without, every row has the task's own."""
        return dist.to_host(task.population_program(*self.program_args(task, rows, keys)))

    def program_args(self, task: Task, rows, keys) -> tuple:
        """The arguments `train_rows` gives `task.population_program` (a dry run compiles it with them)."""
        meta, units = self.split(rows)
        if units is None:
            hypers = task.hypers(np.shape(keys)[0])
        else:
            hypers = self.hyper.task_hypers(task.train_config, dist.to_host(units))
        return meta, dist.to_global(keys, self.mesh), dist.to_global(hypers, self.mesh)

    def population_fitness(self, population, task_keys: list[np.ndarray], tasks: list[Task], baselines
                           ) -> PopulationFitness:
        """Train the population on `tasks` with `task_keys` and score it against `baselines`
        (`metadisco.meta.baselines.Baselines`)."""
        if not self.paired:
            normalisers = baselines.normalisers_of(tasks)
            returns = [self.train_rows(task, population, keys) for task, keys in zip(tasks, task_keys, strict=True)]
            scores = scale([member_fitness(r) for r in returns], normalisers)
            fitness = np.mean(np.stack(scores), axis=0)  # = combine(...)
            return PopulationFitness(returns, fitness, {}, scores, self.to_tell(fitness, scores))
        P = self.population_size
        rows = dist.to_global(paired.with_control(dist.to_host(population), self.control, self.devices), self.mesh)
        returns, scores, controls = [], [], []
        for task, keys in zip(tasks, task_keys, strict=True):
            out = self.train_rows(task, rows, paired.rows_of(keys[0], paired.count(rows)))
            ppo = member_fitness(out[P:P + 1])[0]
            controls.append(ppo)
            returns.append(out[:P])
            scores.append(paired.relative(member_fitness(out[:P]), ppo, baselines.scales[task.name]))
        ppo_scores = {t.name: float(c) for t, c in zip(tasks, controls, strict=True)}
        fitness = paired.combine_tasks(scores, controls)
        return PopulationFitness(returns, fitness, ppo_scores, scores, self.to_tell(fitness, scores))

    def to_tell(self, fitness: np.ndarray, scores: list[np.ndarray]) -> np.ndarray:
        """What the ES is told [P] (higher is better), from the reported `fitness` [P] and the per-task `scores`:
        `fitness` itself (combine: mean), or the mean over tasks of the members' centred ranks within each task
        (combine: rank; a task no member has a finite score on is left out, see `mean_task_ranks`)."""
        return mean_task_ranks(scores) if self.ranked else fitness

    def __call__(self, es_state, generation: int, baselines) -> tuple[Any, GenerationOutput]:
        """One generation: ask, train the population on this generation's tasks, tell."""
        t0 = time.perf_counter()
        keys = self.keys(generation)
        tasks = self.tasks_of(generation)
        population, es_state = self.ask(keys.ask, es_state)
        jax.block_until_ready(population)
        t_ask = time.perf_counter() - t0
        t_train = time.perf_counter()
        scored = self.population_fitness(population, keys.tasks, tasks, baselines)
        t1 = time.perf_counter()
        t_train = t1 - t_train
        es_state = self.tell(keys.tell, population, scored.told, es_state)
        jax.block_until_ready(es_state)
        t_tell = time.perf_counter() - t1
        return es_state, GenerationOutput(generation, tasks, population, scored.returns, scored.fitness,
                                          scored.ppo, t_train, t_ask + t_tell, scored.scores, scored.told)

    # -- the ES mean ----------------------------------------------------------------------------------

    def score_paired(self, meta, tasks: list[Task], keys_of, baselines, min_rows: int = 0
                     ) -> tuple[float | None, dict]:
        """PPO-normalised score of one ES point `meta` (the objective, and hyper units if searched) against PPO
        on the same keys: each task's rows are (meta, PPO) pairs, pair j on seeds `keys_of(task)[j]`, padded to
        `min_rows` (the population's row count reuses the population's compiled program); (mean over tasks,
        {task name: score})."""
        per_task = {}
        for task in tasks:
            keys = keys_of(task)  # [pairs, S, 2]
            rows, n = paired.pairs(meta, self.control, keys.shape[0], self.devices, min_rows)
            out = self.train_rows(task, dist.to_global(rows, self.mesh), paired.pair_keys(keys, n))
            half = keys.shape[0]
            mine, ppo = paired.run_mean(out[:half]), paired.run_mean(out[half:2 * half])
            scale = baselines.scales.get(task.name) or float(ppo_gap(ppo, baselines.random[task.cfg.env]))
            per_task[task.name] = float(paired.relative(np.asarray([mine]), ppo, scale)[0])
        values = np.asarray(list(per_task.values()))
        value = float(np.mean(values)) if values.size and np.all(np.isfinite(values)) else None
        return value, per_task

    def mean_fitness(self, meta, baselines) -> float | None:
        """Fitness (higher is better) of the ES point `meta` (e.g. the ES mean) over P x S fresh seeds per
        task (paired: PPO-normalised on fresh seeds of every task at every length); None if all diverged."""
        if self.paired:
            return self.score_paired(meta, self.tasks, self.fresh_keys, baselines, self.population_rows())[0]
        population = self._tile(dist.to_global(meta, self.mesh))
        returns = [self.train_rows(task, population, keys) for task, keys in zip(self.tasks, self._mean_keys(),
                                                                                 strict=True)]
        # Every run counts as one seed of one member: average the finite runs of each task.
        per_task = [np.nanmean(np.where(np.isfinite(r), r, np.nan)) if np.isfinite(r).any() else np.nan
                    for r in returns]
        value = combine([np.asarray([v]) for v in per_task], baselines.normalisers_of(self.tasks))[0]
        return float(value) if np.isfinite(value) else None

    def validation(self, meta, baselines) -> tuple[float | None, dict]:
        """The PPO-normalised score of the ES point `meta` on the validation tasks (every length of each)."""
        return self.score_paired(meta, self.valid_tasks, self.validation_keys, baselines)
