"""One generation of meta-training: ask -> evaluate the population on the problem -> tell.

    population, es_state = ask(key_g, es_state)            # meta-param pytree, leaves [P, ...]
    scored = problem.evaluate(population, g, baselines)     # `metadisco.meta.problem.MetaProblem`
    es_state = tell(key_g, population, scored.told, es_state)   # `to_minimise` fixes the sign, here only

`GenerationStep` is the strategy half (init / ask / tell / mean, jitted and replicated over the mesh, the
`metadisco.meta.strategy` wrapper of an evosax strategy) joined to a problem half, any `metadisco.meta.problem.Problem`
(as evosax 0.3's `Problem.eval` composes with any strategy): by default the config's `MetaProblem` (the tasks,
their keys and compiled population programs, fitness and the scores of one fixed point); a test or a user can
pass another, e.g. `metadisco.meta.synthetic.QuadraticProblem`, a known optimum in seconds. Hooks that run after
each tell (score the mean, validate, write, checkpoint) live in `metadisco.meta.hooks`; the run directory,
baselines and logging in `metadisco.runs.rundir`, `metadisco.meta.baselines` and `metadisco.meta.loop`.

Every key derives from (config.seed, generation) (`metadisco.meta.problem.generation_keys`), so a run resumed
from a checkpoint repeats exactly what the uninterrupted run would have done.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.core.streams import ES_INIT_STREAM, ES_START_STREAM
from metadisco.meta.config import MetaConfig
from metadisco.meta.fitness import to_minimise
from metadisco.meta.problem import MetaProblem, Problem, generation_keys
from metadisco.meta.start import start_point
from metadisco.meta.strategy import Strategy, make_strategy
from metadisco.parallel import hosts
from metadisco.parallel.sharding import make_mesh

# ---------------------------------------------------------------------------------------------------------
# what a generation reports


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
    tasks: list[np.ndarray]  # per task of `MetaProblem.tasks_of(generation)`: [P, S, 2], shared by members


@dataclass(frozen=True)
class GenerationOutput:
    generation: int
    tasks: list  # the tasks this generation trained on (`Task`s for a `MetaProblem`)
    population: Any  # the members asked for (device pytree, leaves [P, ...])
    returns: list[np.ndarray]
    fitness: np.ndarray  # reported: the normalised mean over tasks (`PopulationFitness.fitness`)
    baseline: dict[str, float]  # paired: the baseline's fitness per task name (metrics.jsonl's "baseline")
    train_seconds: float  # training the population (the work itself)
    es_seconds: float  # ask + tell
    scores: list[np.ndarray]  # per task: [P] normalised scores
    told: np.ndarray  # [P] what the ES was told
    chosen: list[np.ndarray] | None = None  # tuned fitness: per task [P], each member's best grid point
    baseline_chosen: dict[str, int] | None = None  # tuned, paired: the baseline's best grid point per task


class GenerationStep:
    """One meta-training config's strategy (init / ask / tell / mean) and problem (`self.problem`).

    `step(es_state, generation, baselines) -> (es_state, GenerationOutput)` is a pure function of its
    arguments (every key comes from the config's seed and the generation number): ask, each task's population
    program and tell are jitted (sharded over `mesh`), and the fitness is combined on the host in float64.
    `metadisco.meta.loop.meta_train` calls it once a generation; a library user can drive it directly::

        from metadisco.meta.baselines import measure_baselines
        from metadisco.meta.load import parse_config
        from metadisco.meta.step import GenerationStep
        from metadisco.objectives.files import save_objective

        step = GenerationStep(parse_config(config_dict))
        baselines = measure_baselines(step.problem)          # PPO scales / normalisers, as meta_train measures them
        state = step.init()
        for g in range(10):
            state, out = step(state, g, baselines)
            print(g, out.fitness.mean())
        meta, units = step.split(step.solution(state))   # units: None without a `hyper:` section
        save_objective("mine.msgpack", step.objective, meta)
    """

    def __init__(self, config: MetaConfig, mesh=None, problem: Problem | None = None):
        self.config = config
        self.objective = config.objective
        self.base_key = np.asarray(jax.random.PRNGKey(config.seed))
        self.hyper = config.hyper  # the settings evolved with the objective (empty: none)
        start = self.hyper.point(start_point(self.objective, config.start,
                                             jax.random.fold_in(self.base_key, ES_START_STREAM), config.start_scale))
        self.strategy: Strategy = make_strategy(config.strategy, start)
        self.mesh = mesh if mesh is not None else make_mesh()
        hosts.check_population(config.strategy.population_size, self.mesh)
        strategy, rep = self.strategy, hosts.replicated(self.mesh)
        # States leave init and tell strongly typed, as a state read back from a checkpoint is: one compiled
        # ask / tell serves a fresh and a resumed run alike.
        self._init = jax.jit(lambda key: _strong(strategy.init(key)), out_shardings=rep)
        self._ask = jax.jit(strategy.ask, out_shardings=rep)
        # The sign is fixed in fitness.to_minimise, applied here and nowhere else.
        self._tell = jax.jit(
            lambda key, pop, fitness, state: _strong(strategy.tell(key, pop, to_minimise(fitness), state)),
            out_shardings=rep)
        self._solution = jax.jit(strategy.solution, out_shardings=rep)
        # PPO on the same seed keys: every learned piece at zero is the handcrafted baseline exactly, at each
        # task's own hyperparameters (units zero).
        self.problem: Problem = problem if problem is not None else MetaProblem(
            config, self.mesh, self.hyper, self.hyper.point(self.objective.zero_meta()), self.base_key)

    population_size = property(lambda self: self.problem.population_size)
    devices = property(lambda self: self.problem.devices)  # the mesh's device count

    # -- ES state -------------------------------------------------------------------------------------

    def init(self, key=None):
        """The strategy's initial state (device pytree, replicated), from the config's init key stream."""
        key = jax.random.fold_in(self.base_key, ES_INIT_STREAM) if key is None else key
        return self._init(hosts.to_global(key, self.mesh))

    def ask(self, key, es_state):
        """(population, es_state): the members to train, leaves [P, ...]."""
        return self._ask(hosts.to_global(key, self.mesh), es_state)

    def tell(self, key, population, fitness: np.ndarray, es_state):
        """The new ES state from the population's fitness [P] (higher is better)."""
        return self._tell(hosts.to_global(key, self.mesh), population,
                          hosts.to_global(np.asarray(fitness).astype(np.float32), self.mesh), es_state)

    def solution(self, es_state):
        """The point the run stands for (host numpy pytree): the ES mean, or a GA's best member so far; the
        objective's meta-parameters, or with a `hyper:` section {"objective": meta-parameters, "hyper": units}
        (`split` parts them)."""
        return hosts.to_host(self._solution(es_state))

    def split(self, point) -> tuple[Any, dict | None]:
        """(objective meta-parameters, hyper units {setting: value} or None) of an ES point or rows of them."""
        return self.hyper.split(point)

    def hyper_values(self, units) -> dict[str, dict[str, float]]:
        """The evolved settings of one ES point's `units` on every training and validation task, as its
        trainer gets them: {task name: {setting: value}}."""
        return {task.name: self.hyper.task_values(task.train_config, units)
                for task in self.problem.tasks + self.problem.valid_tasks}

    # -- keys -----------------------------------------------------------------------------------------

    def keys(self, generation: int) -> GenerationKeys:
        """Keys of generation `generation`: the strategy's ask and tell keys and the problem's seed keys."""
        ask_key, tell_key, _ = generation_keys(self.base_key, generation)
        return GenerationKeys(ask_key, tell_key, self.problem.task_keys(generation))

    def __call__(self, es_state, generation: int, baselines) -> tuple[Any, GenerationOutput]:
        """One generation: ask, evaluate the population on the problem, tell."""
        t0 = time.perf_counter()
        ask_key, tell_key, _ = generation_keys(self.base_key, generation)
        population, es_state = self.ask(ask_key, es_state)
        jax.block_until_ready(population)
        t_ask = time.perf_counter() - t0
        t_train = time.perf_counter()
        scored = self.problem.evaluate(population, generation, baselines)
        t1 = time.perf_counter()
        t_train = t1 - t_train
        es_state = self.tell(tell_key, population, scored.told, es_state)
        jax.block_until_ready(es_state)
        t_tell = time.perf_counter() - t1
        return es_state, GenerationOutput(generation, self.problem.tasks_of(generation), population,
                                          scored.returns, scored.fitness, scored.baseline, t_train, t_ask + t_tell,
                                          scored.scores, scored.told, scored.chosen, scored.baseline_chosen)
