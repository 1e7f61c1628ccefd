"""The meta-problem: what a population of ES points is scored on, and how (the problem half of evosax's
strategy / problem split; the strategy half is `metadisco.meta.strategy`, and `metadisco.meta.step` joins
them into one generation).

With P members, T tasks and S seeds per member and task:

    for each task t (tasks of different shapes run one after another, one compiled program each):
        returns_t = population_program_t(population, keys_t, hypers_t)  # [P, S]; members sharded over the mesh
    fitness = mean over tasks of (mean over seeds of returns_t) / |baseline_t|    # [P], higher is better
    told = fitness, or with `combine: rank` mean over tasks of centred ranks within each task   # [P]

All members of a generation train with the same S keys (common random numbers: antithetic pairs differ only
in their perturbation). A member with a non-finite return on any seed (diverged) gets NaN fitness, which
`metadisco.meta.fitness.to_minimise` makes the worst. With `normalise: paired` PPO trains on the same seed
keys in the same call and each member scores 1 + (member - PPO) / ppo_gap per task (`metadisco.meta.paired`).

What the ES is told and what is reported are kept apart: `fitness` (metrics.jsonl's `fitness_*`) is always the
normalised mean over tasks; with `combine: rank` the ES is told the mean of the members' centred ranks within
each task instead (`metadisco.meta.fitness.mean_task_ranks`), so that every task counts equally in its ranking.

With a `hyper:` section an ES point is {"objective": meta-parameters, "hyper": {setting: units}}
(`metadisco.meta.hyper_search`): the population program trains each member's objective with its own
hyperparameters (the task's own values moved by the member's units), and the PPO control keeps the task's own.

Every key derives from (config.seed, generation), so a resumed run repeats exactly what the uninterrupted run
would have done. A fixed point (the ES mean, a kept objective) is scored on fresh seeds (a key stream training
never uses, the same at every evaluation, so evaluations pair); with paired normalisation PPO's side on those
seeds is measured once per run and the point trains alone, where that is the smaller call (`score_paired`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.core.errors import UserError
from metadisco.core.stats import seed_mean
from metadisco.core.streams import META_EVAL_STREAM, REFERENCE_STREAM, VALIDATION_STREAM
from metadisco.envs import ONE_DEVICE_WHY, runs_on_one_device
from metadisco.meta import paired
from metadisco.meta.baselines import ppo_settings
from metadisco.meta.config import MetaConfig
from metadisco.meta.fitness import mean_task_ranks, ppo_gap
from metadisco.meta.tasks import Task, build_tasks, sample_tasks, with_objective
from metadisco.meta.tuning import Grid, best_of
from metadisco.objectives import Objective
from metadisco.parallel import hosts
from metadisco.parallel.sharding import make_mesh
from metadisco.runs import baseline_cache
from metadisco.trainers.algorithm import baseline_of
from metadisco.trainers.hyper import hyper_of


def separate_control(objective) -> Objective | None:
    """The handcrafted control a paired run scores against when it is not the objective at zero meta-parameters:
    a learned update rule's is its algorithm's control (`Algorithm.control`: disco_rl's actor-critic rule), another
    objective with a program of its own; None where the objective at zero is the control (every other slot)."""
    if baseline_of(objective) != "none":
        return None
    from metadisco.objectives import BUILTIN_OBJECTIVES
    from metadisco.trainers.algorithm import get_algorithm

    control = BUILTIN_OBJECTIVES.get(get_algorithm(objective.algorithm).control)
    return control if control is not None and baseline_of(control) != "none" else None


def generation_keys(base_key, generation: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ask, tell, train) keys of generation `generation`: the one derivation the strategy and the problem
    share."""
    ask, tell, train = jax.random.split(jax.random.fold_in(base_key, generation), 3)
    return np.asarray(ask), np.asarray(tell), np.asarray(train)


# ---------------------------------------------------------------------------------------------------------
# fitness of a population


def member_fitness(returns: np.ndarray) -> np.ndarray:
    """[P, S] returns -> [P]: mean over seeds, NaN when any seed is not finite (diverged): a member that
    diverges on one seed ranks last (`seed_mean`'s "fail")."""
    return seed_mean(np.asarray(returns, np.float64), -1, diverged="fail")


def scale(per_task: list[np.ndarray], normalisers: list[float | None]) -> list[np.ndarray]:
    """Each task's fitness [P] divided by the size of its normaliser (when it has one): the per-task scores of
    fixed normalisation.

    Dividing by |baseline| keeps the order of members on envs whose returns are negative (Acrobot, Pendulum),
    where dividing by the baseline itself would rank the worst member first."""
    return [f / abs(n) if n else f for f, n in zip(per_task, normalisers, strict=True)]


def _at(returns: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Returns [P, G, S] at each member's chosen grid point [P] (-1, no finite point: the first): [P, S]."""
    return returns[np.arange(returns.shape[0]), np.maximum(chosen, 0)]


def combine(per_task: list[np.ndarray], normalisers: list[float | None]) -> np.ndarray:
    """Mean over tasks of each task's fitness divided by the size of its normaliser (`scale`): [P]."""
    return np.mean(np.stack(scale(per_task, normalisers)), axis=0)


@dataclass(frozen=True)
class PopulationFitness:
    returns: list[np.ndarray]  # per task: [P, S] returns
    fitness: np.ndarray  # [P] the normalised mean over tasks (reported), higher is better; NaN: diverged member
    baseline: dict[str, float]  # paired normalisation: the baseline's (PPO's, or the objective's own at zero)
    # fitness per task name on the same keys (else empty)
    scores: list[np.ndarray]  # per task: [P] members' normalised scores, in the units of `fitness`
    told: np.ndarray  # [P] what the ES is told (higher is better): `fitness` itself, or with combine: rank the
    # mean over tasks of centred ranks (`metadisco.meta.fitness.mean_task_ranks`)
    chosen: list[np.ndarray] | None = None  # tuned fitness: per task [P], each member's best grid point (-1: none)
    baseline_chosen: dict[str, int] | None = None  # tuned, paired: the baseline's best grid point per task name


# ---------------------------------------------------------------------------------------------------------
# the problem


@runtime_checkable
class Problem(Protocol):
    """What the outer loop (`metadisco.meta.step.GenerationStep`) needs of a problem, as evosax 0.3's `Problem`:
    score a population of ES points. `MetaProblem` trains RL agents; `metadisco.meta.synthetic` has a known
    optimum, for testing strategies and the loop in seconds."""

    population_size: int
    devices: int

    def tasks_of(self, generation: int) -> list: ...

    def task_keys(self, generation: int) -> list[np.ndarray]: ...

    def evaluate(self, population, generation: int, baselines) -> PopulationFitness: ...


class MetaProblem:
    """The tasks of a meta-training config and how a population is scored on them.

    `evaluate(population, generation, baselines) -> PopulationFitness` trains every ES point of `population`
    (device pytree, leaves [P, ...]) on the generation's tasks with the generation's seeds and scores it; one
    compiled population program per task, so a generation crosses to the host once per task (its returns) and
    once for the keys. `mean_fitness` and `validation` score one fixed point on fresh seeds.
    """

    def __init__(self, config: MetaConfig, mesh, hyper, control, base_key):
        self.config = config
        self.mesh = mesh
        self.hyper = hyper  # the settings evolved with the objective (empty: none)
        self.control = control  # PPO's ES point: every learned piece at zero, units zero
        # A control that is another objective (a learned update rule's actor-critic) trains in a program of its own
        # on the same keys: `control_task`. Then `control` is that objective's (empty) meta-parameters.
        self.control_objective = separate_control(config.objective)
        if self.control_objective is not None:
            self.control = self.control_objective.zero_meta()
        self.base_key = base_key
        self.paired = config.normalise == "paired"
        self.ranked = config.combine == "rank"
        P = config.strategy.population_size
        self._tile = jax.jit(lambda mean: jax.tree.map(lambda x: jnp.broadcast_to(x, (P, *x.shape)), mean),
                             out_shardings=hosts.replicated(mesh))
        one_device = [t.env for t in (*config.tasks, *config.validation.tasks) if runs_on_one_device(t.env)]
        if one_device and jax.process_count() > 1:  # a one-device program cannot span the processes
            raise UserError(f"task env {one_device[0]!r}: {ONE_DEVICE_WHY}, so it cannot be part of a "
                            "multi-process run; meta-train it in one process")
        self.task_lengths = build_tasks(config.tasks, config.objective, config.fitness.score, mesh)
        self.tasks: list[Task] = [t for lengths in self.task_lengths for t in lengths]  # every (env, length)
        self.valid_tasks: list[Task] = [t for lengths in build_tasks(
            config.validation.tasks, config.objective, config.fitness.score, mesh, "validation.tasks")
            for t in lengths]
        self.grid = Grid.of(config.fitness.tune)  # tuned fitness's grid (empty: each task's own settings)
        self.last_choice: dict = {}  # tuned: the grid points the last `score_paired` / `mean_fitness` chose
        self._control_scores: dict = {}  # `control_score`'s figures, measured once per run
        # Env steps of the scoring calls as they ran (`ran`): what metrics.jsonl's `env_steps` adds up. The reference
        # and control measurements (`train_rows` from `metadisco.meta.baselines`, `control_score`) are not in it.
        self.env_steps = 0
        self._device_meshes = [make_mesh([device]) for device in mesh.devices.flat]  # `own_device`'s

    @property
    def population_size(self) -> int:
        return self.config.strategy.population_size

    @property
    def control_name(self) -> str:
        """The control's name in messages: PPO, DPO, PQN, DQN, or the update rule's actor-critic."""
        return baseline_of(self.control_objective or self.config.objective)

    def control_task(self, task: Task) -> Task:
        """`task` as its control trains: the same task, or with a separate control (`separate_control`) the same
        env, length and settings under the control objective's program."""
        if self.control_objective is None:
            return task
        return with_objective(task, self.control_objective, self.config.fitness.score)

    def control_rows(self) -> int:
        """Rows of a separate control's call: two per device (any two give every row the bits of a larger call)."""
        return 2 * self.devices

    @property
    def devices(self) -> int:
        return int(self.mesh.devices.size)

    # -- keys -----------------------------------------------------------------------------------------

    def tasks_of(self, generation: int) -> list[Task]:
        """The tasks (env and training length) generation `generation` trains on."""
        key = jax.random.fold_in(self.base_key, generation)
        return sample_tasks(key, self.task_lengths, self.config.sampling.tasks_per_generation,
                            dict(self.config.sampling.scale))

    def task_keys(self, generation: int) -> list[np.ndarray]:
        """Seed keys of generation `generation`, per task of `tasks_of(generation)`: [P, S, 2], shared by the
        members; a config task's seeds do not depend on which length it is drawn at."""
        P = self.population_size
        train_key = generation_keys(self.base_key, generation)[2]
        out = []
        for task in self.tasks_of(generation):
            seeds = jax.random.split(jax.random.fold_in(train_key, task.index), task.cfg.seeds)
            out.append(np.broadcast_to(np.asarray(seeds), (P, *seeds.shape)))
        return out

    def population_rows(self) -> int:
        """Rows of the paired population program: P members, PPO, padding to the device count (with a separate
        control, `control_task`: the P members padded, and the control's rows apart)."""
        if self.control_objective is not None:
            return -(-self.population_size // self.devices) * self.devices
        return paired.count_rows(self.population_size, self.devices)

    def fresh_keys(self, task: Task) -> np.ndarray:
        """Fresh seeds of a training task, [pairs, S, 2]: as many (meta, PPO) pairs as the population's
        rows hold, from a stream training never uses, the same at every evaluation (so evaluations pair)."""
        pairs = self.population_rows() // 2
        stream = jax.random.fold_in(jax.random.fold_in(self.base_key, META_EVAL_STREAM), task.index)
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
        stream = jax.random.fold_in(self.base_key, META_EVAL_STREAM)
        out = []
        for t, task in enumerate(self.tasks):
            keys = jax.random.split(jax.random.fold_in(stream, t), P * task.cfg.seeds)
            out.append(np.asarray(keys).reshape(P, task.cfg.seeds, -1))
        return out

    # -- fitness --------------------------------------------------------------------------------------

    def ran(self, task: Task, rows: int) -> None:
        """Count a scoring call of `task`'s program on `rows` rows in `env_steps`."""
        self.env_steps += int(rows) * task.cfg.seeds * task.steps_per_run

    def train_rows(self, task: Task, rows, keys) -> np.ndarray:
        """Run `task`'s population program on `rows` (ES points, device pytree, leaves [M, ...]) and host seed
        keys [M, S, 2]: returns [M, S] (host). With a `hyper:` section each row trains with the task's own
        hyperparameters moved by its units; without, every row has the task's own. Not counted in `env_steps`
        (a measurement's call); the scoring calls count theirs (`scored_rows`, `train_grid`)."""
        return hosts.to_host(task.population_program(*self.program_args(task, rows, keys)))

    def scored_rows(self, task: Task, rows, keys) -> np.ndarray:
        """`train_rows`, counted in `env_steps`."""
        self.ran(task, np.shape(keys)[0])
        return self.train_rows(task, rows, keys)

    def train_grid(self, task: Task, rows, keys) -> np.ndarray:
        """Returns [M, G, S] of `rows` (ES points, device pytree, leaves [M, ...]) and keys [M, S, 2] at every point
        of the tuning grid, in one call of `task`'s program: row (r, g) trains row r at grid point g
        (`metadisco.meta.tuning`); counted in `env_steps`. Untuned, `scored_rows` with G = 1."""
        if not self.grid:
            return self.scored_rows(task, rows, keys)[:, None]
        M, G = np.shape(keys)[0], self.grid.size  # the keys count the rows (a control's may have no leaves)
        self.ran(task, M * G)
        expanded = hosts.to_global(self.grid.expand(hosts.to_host(rows)), self.mesh)
        args = self.program_args(task, expanded, np.repeat(np.asarray(keys), G, axis=0), grid=True)
        return hosts.to_host(task.population_program(*args)).reshape(M, G, -1)

    def program_args(self, task: Task, rows, keys, mesh=None, grid: bool = False) -> tuple:
        """The arguments `train_rows` gives `task.population_program` (a dry run compiles it with them), placed on
        `mesh` (default: the task's); `grid`: rows expanded by `Grid.expand`, each at its grid point's settings."""
        meta, units = self.hyper.split(rows)
        if units is None:
            hypers = task.hypers(np.shape(keys)[0])
        else:
            hypers = self.hyper.task_hypers(task.train_config, hosts.to_host(units))
        if grid:
            hypers = self.grid.set_points(hypers)
        if mesh is None:
            mesh = task.mesh if task.mesh is not None else self.mesh
        if mesh is not self.mesh:  # a task on its own device (brax, or `own_device`): the rows move there
            meta = hosts.to_global(hosts.to_host(meta), mesh)
        return meta, hosts.to_global(keys, mesh), hosts.to_global(hypers, mesh)

    def population_fitness(self, population, task_keys: list[np.ndarray], tasks: list[Task], baselines
                           ) -> PopulationFitness:
        """Train the population on `tasks` with `task_keys` and score it against `baselines`
        (`metadisco.meta.baselines.Baselines`)."""
        tuned = bool(self.grid)
        if not self.paired:
            normalisers = baselines.normalisers_of(tasks)
            per_task, returns, chosen = [], [], []
            for task, keys in zip(tasks, task_keys, strict=True):
                out = self.train_grid(task, population, keys)  # [P, G, S]
                best, picks = best_of(member_fitness(out))  # untuned (G = 1): member_fitness of out[:, 0]
                per_task.append(best), returns.append(_at(out, picks)), chosen.append(picks)
            scores, fitness = scale(per_task, normalisers), combine(per_task, normalisers)
            return PopulationFitness(returns, fitness, {}, scores, self.to_tell(fitness, scores),
                                     chosen if tuned else None)
        P = self.population_size
        host = hosts.to_host(population)
        if self.control_objective is None:
            rows = paired.with_control(host, self.control, self.devices)
        else:  # the members alone, padded with copies of the first; the control trains in its own call below
            rows = paired.padded(host, self.population_rows())
        rows = hosts.to_global(rows, self.mesh)
        returns, scores, controls, chosen, control_chosen = [], [], [], [], {}
        for task, keys in zip(tasks, task_keys, strict=True):
            out = self.train_grid(task, rows, paired.rows_of(keys[0], paired.count(rows)))  # [rows, G, S]
            control_out = out[P] if self.control_objective is None else self._separate_control_grid(task, keys[0])
            ppo, ppo_pick = best_of(member_fitness(control_out))  # PPO at its own best point
            best, picks = best_of(member_fitness(out[:P]))
            controls.append(float(ppo))
            control_chosen[task.name] = int(ppo_pick)
            returns.append(_at(out[:P], picks)), chosen.append(picks)
            scores.append(paired.relative(best, ppo, baselines.scales[task.name]))
        baseline_scores = {t.name: float(c) for t, c in zip(tasks, controls, strict=True)}
        fitness = paired.combine_tasks(scores, controls)
        return PopulationFitness(returns, fitness, baseline_scores, scores, self.to_tell(fitness, scores),
                                 chosen if tuned else None, control_chosen if tuned else None)

    def _separate_control_grid(self, task: Task, seeds: np.ndarray) -> np.ndarray:
        """[G, S] returns of a separate control (`control_task`) on seed keys [S, 2] at every grid point."""
        rows = self.control_rows()
        points = hosts.to_global(paired.copies(self.control, rows), self.mesh)
        return self.train_grid(self.control_task(task), points, paired.rows_of(seeds, rows))[0]

    def to_tell(self, fitness: np.ndarray, scores: list[np.ndarray]) -> np.ndarray:
        """What the ES is told [P] (higher is better), from the reported `fitness` [P] and the per-task `scores`:
        `fitness` itself (combine: mean), or the mean over tasks of the members' centred ranks within each task
        (combine: rank; a task no member has a finite score on is left out, see `mean_task_ranks`)."""
        return mean_task_ranks(scores) if self.ranked else fitness

    def evaluate(self, population, generation: int, baselines) -> PopulationFitness:
        """Train `population` on generation `generation`'s tasks with its seeds and score it."""
        return self.population_fitness(population, self.task_keys(generation), self.tasks_of(generation),
                                       baselines)

    # -- one fixed point ------------------------------------------------------------------------------

    def score_paired(self, meta, tasks: list[Task], keys_of, baselines, min_rows: int = 0
                     ) -> tuple[float | None, dict]:
        """PPO-normalised score of one ES point `meta` (the objective, and hyper units if searched) against PPO
        on the same keys, pair j on seeds `keys_of(task)[j]`; (mean over tasks, {task name: score}).

        The numbers are those of one call per task of (meta, PPO) pairs padded to `min_rows` rows (`paired.pairs`:
        the population's row count reuses its compiled program). Where a call of the point alone is smaller
        (`paired.point_rows`), the point trains alone and PPO's side comes from `control_score`, which trains it
        once per run on these keys: the same bits, at about half the work of the mean's every evaluation after
        the first. Where the paired call would give each device one row (a validation pair on two devices), each
        task's point trains alone on a device of its own (`own_device`), every such task at once, and PPO's side
        comes from `control_score` on that device: half the work, and the tasks side by side.

        With tuned fitness the point and PPO each train at every grid point (one call of these per point, the
        same compiled programs) and each is scored at its own best point; `last_choice` says which."""
        at_points = [self._paired_means(meta, self.grid.tasks_at(tasks, g), keys_of, min_rows)
                     for g in range(self.grid.size)]
        per_task, choice = {}, {}
        for task in tasks:
            mine, mine_at = best_of([point[task.name][0] for point in at_points])
            ppo, ppo_at = best_of([point[task.name][1] for point in at_points])
            scale = baselines.scales.get(task.name) or float(ppo_gap(ppo, baselines.random[task.cfg.env]))
            per_task[task.name] = float(paired.relative(np.asarray([mine]), ppo, scale)[0])
            choice[task.name] = {"point": self.grid.label(int(mine_at)), "baseline": self.grid.label(int(ppo_at))}
        self.last_choice = choice if self.grid else {}
        values = np.asarray(list(per_task.values()))
        value = float(np.mean(values)) if values.size and np.all(np.isfinite(values)) else None
        return value, per_task

    def _paired_means(self, meta, tasks: list[Task], keys_of, min_rows: int) -> dict[str, tuple[float, float]]:
        """{task name: (the point's mean return, PPO's)} on seeds `keys_of(task)`, laid out as `score_paired`
        says."""
        ends = {}  # task name -> (the point's mean return, PPO's), each a call that waits for it
        for j, task in enumerate(tasks):
            keys = keys_of(task)  # [pairs, S, 2]
            half = keys.shape[0]
            rows, device, alone = self.point_layout(task, j, half, min_rows)
            self.ran(task, rows)
            if device is not None:  # dispatched now, waited for below: the tasks run at once
                returns = self._point_returns(meta, task, keys, rows, device)
                ends[task.name] = (lambda r=returns, h=half: paired.run_mean(hosts.to_host(r)[:h]),
                                   self._control(task, keys, rows, device))
            elif alone:
                mine = paired.run_mean(hosts.to_host(self._point_returns(meta, task, keys, rows))[:half])
                ends[task.name] = (lambda m=mine: m, self._control(task, keys, rows))
            else:
                points, _ = paired.pairs(meta, self.control, half, self.devices, min_rows)
                out = self.train_rows(task, hosts.to_global(points, self.mesh), paired.pair_keys(keys, rows))
                mine, ppo = paired.run_mean(out[:half]), paired.run_mean(out[half:2 * half])
                ends[task.name] = (lambda m=mine: m, lambda p=ppo: p)
        return {task.name: tuple(end() for end in ends[task.name]) for task in tasks}

    def point_layout(self, task: Task, j: int, num_pairs: int, min_rows: int = 0) -> tuple[int, object, bool]:
        """How `score_paired` calls the `j`-th task for one point on `num_pairs` seed rows: (the call's rows, the
        device of its own or None, whether the point trains alone). Alone on a device of its own (`own_device`:
        rows = num_pairs), alone on the mesh where that call is the smaller (`_alone_rows`), alone beside a
        separate control's call, or else in the (point, PPO) pairs call padded to `min_rows`."""
        if self.control_objective is not None:  # the point and its control never share a program
            return paired.point_rows(num_pairs, self.devices, 2 * self.devices), None, True
        device = self.own_device(task, j, num_pairs, min_rows)
        if device is not None:
            return num_pairs, device, True
        alone = self._alone_rows(num_pairs, min_rows)
        if alone is not None:
            return alone, None, True
        return paired.paired_rows(num_pairs, self.devices, min_rows), None, False

    def own_device(self, task: Task, j: int, num_pairs: int, min_rows: int = 0):
        """The one-device mesh on which the `j`-th task of a scoring pass trains the point alone, or None (the
        pass calls the task's program on the mesh).

        Where the paired call of `num_pairs` pairs would put one row on each device (one validation pair on two
        devices), half of that call trains PPO again on keys it has trained on before, and the tasks queue one
        after another. Instead task j trains the point on device j mod n alone, all such tasks at once, and PPO's
        side is measured once per run on the same device. The bits are those of a one-device program, not of the
        paired call's (XLA compiles a program split over devices differently from a one-device one). One process
        only: a device of another process cannot be given a program of its own."""
        if (self.control_objective is not None or jax.process_count() > 1 or self.devices < 2
                or task.mesh is not self.mesh
                or paired.paired_rows(num_pairs, self.devices, min_rows) != self.devices):
            return None
        return self._device_meshes[j % self.devices]

    def _alone_rows(self, num_pairs: int, min_rows: int) -> int | None:
        """Rows of a call that scores one point alone on `num_pairs` seed rows with the bits of the paired call
        (`paired.point_rows`), when that call is the smaller; None when the paired call is no larger."""
        total = paired.paired_rows(num_pairs, self.devices, min_rows)
        alone = paired.point_rows(num_pairs, self.devices, total)
        return alone if alone < total else None

    def _point_returns(self, point, task: Task, keys: np.ndarray, rows: int, mesh=None):
        """Returns [rows, S] (a device array, not waited for) of one point on p seed rows `keys` [p, S, 2] in a
        call of `rows` rows (the first p are its; filler rows repeat keys[0]), on `mesh` (default: the task's)."""
        points = hosts.to_global(paired.copies(point, rows), self.mesh)
        return task.program(mesh)(*self.program_args(task, points, paired.point_keys(keys, rows), mesh))

    def control_score(self, task: Task, keys: np.ndarray, rows: int, mesh=None) -> float:
        """PPO's mean return on `task` over the seed rows `keys` [p, S, 2], trained in a call of `rows` rows on
        `mesh` (default: the task's): measured on the first request and kept for the run (fresh and validation keys
        are the same at every evaluation, and the control never changes), and through the baseline cache, so
        that a resumed or repeated run reads it back instead of training PPO again."""
        return self._control(task, keys, rows, mesh)()

    def _control(self, task: Task, keys: np.ndarray, rows: int, mesh=None):
        """`control_score` as a call that waits for it: a measurement it needs starts now, in the background."""
        devices = self.devices if mesh is None else int(mesh.devices.size)
        settings = tuple(float(x) for x in hyper_of(task.train_config))  # a grid point's PPO is another figure
        memo_key = (task.name, settings, np.asarray(keys).tobytes(), rows, devices)
        if memo_key not in self._control_scores:
            def start():
                returns = self._point_returns(self.control, self.control_task(task), keys, rows, mesh)  # not waited for
                return lambda: paired.run_mean(hosts.to_host(returns)[:keys.shape[0]])

            self._control_scores[memo_key] = baseline_cache.started(
                "ppo_control", ppo_settings(self, task, keys, rows, devices), start,
                baseline_cache.cacheable(task.cfg.env, self.config.objective))
        return self._control_scores[memo_key]

    def mean_rows(self, j: int) -> int:
        """Rows of one evaluation of the ES mean on the `j`-th training task, as `mean_fitness` calls it (the
        plan's count; the run counts the calls as they ran): with paired normalisation `point_layout`'s, else the
        population's rows."""
        if not self.paired:
            return self.population_size
        total = self.population_rows()
        return self.point_layout(self.tasks[j], j, total // 2, total)[0]

    def mean_fitness(self, meta, baselines) -> float | None:
        """Fitness (higher is better) of the ES point `meta` (e.g. the ES mean) over P x S fresh seeds per
        task (paired: PPO-normalised on fresh seeds of every task at every length); None if all diverged."""
        if self.paired:
            return self.score_paired(meta, self.tasks, self.fresh_keys, baselines, self.population_rows())[0]
        population = self._tile(hosts.to_global(meta, self.mesh))
        at_points, keys = [], self._mean_keys()  # per grid point (one untuned), per task: the mean's mean return
        for g in range(self.grid.size):
            tasks = self.grid.tasks_at(self.tasks, g)
            returns = [self.scored_rows(task, population, k) for task, k in zip(tasks, keys, strict=True)]
            # Every run counts as one seed of one point (the mean): average the finite runs of each task.
            at_points.append([seed_mean(r, None, diverged="skip") for r in returns])  # in the returns' precision
        per_task, chosen = best_of(np.stack(at_points, axis=-1))  # [T]: each task at the mean's best point
        self.last_choice = ({t.name: {"point": self.grid.label(int(c))}
                             for t, c in zip(self.tasks, chosen, strict=True)} if self.grid else {})
        value = combine([np.asarray([v]) for v in per_task], baselines.normalisers_of(self.tasks))[0]
        return float(value) if np.isfinite(value) else None

    def validation_rows(self, j: int) -> int:
        """Rows of the `j`-th validation task's call, as `validation` calls it (`point_layout`; the plan's count)."""
        task = self.valid_tasks[j]
        return self.point_layout(task, j, self.validation_keys(task).shape[0])[0]

    def validation(self, meta, baselines) -> tuple[float | None, dict]:
        """The PPO-normalised score of the ES point `meta` on the validation tasks (every length of each)."""
        return self.score_paired(meta, self.valid_tasks, self.validation_keys, baselines)
