"""Training tasks of a meta-training run: one compiled population program per (env, training length), and the
per-generation draw of which tasks a generation trains on.

A config task with `timesteps: [a, b, c]` becomes three `Task`s (one program each, since the number of updates
fixes the scan length); a generation trains on `sampling.tasks_per_generation` config tasks, each at one of its
lengths, and with `sampling.scale` at drawn values of traced settings such as the learning rate. The draw is a
pure function of the generation's key, so a resumed run draws exactly what the uninterrupted run drew.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import jax
import numpy as np

from metadisco.core.errors import UserError
from metadisco.core.streams import TASK_SAMPLE_STREAM, TASK_SETTINGS_STREAM
from metadisco.meta.config import TaskConfig
from metadisco.objectives import Objective
from metadisco.parallel import hosts
from metadisco.parallel.sharding import AXIS
from metadisco.trainers.config import TrainConfig
from metadisco.trainers.greedy import DEFAULT_EVAL_EPISODES
from metadisco.trainers.hyper import hyper_of, stack, static_of, with_values
from metadisco.trainers.metrics import reduce_fitness


@dataclass
class Task:
    """One env at one training length."""

    index: int  # position in the config's task list
    cfg: TaskConfig
    timesteps: int
    train_config: TrainConfig
    population_program: Any  # jitted (population [M], keys [M, S, 2], hypers [M]) -> fitness [M, S], replicated
    steps_per_run: int
    mesh: Any = None  # the devices its program runs on: the run's mesh, or its first device for an env that
    # runs on one device (`metadisco.envs.runs_on_one_device`: brax)
    program_on: Callable[[Any], Any] = field(default=None, repr=False)  # mesh -> the same population program
    # compiled for that mesh (`population_program`'s is `program_on(mesh)`)

    def program(self, mesh=None):
        """The population program on `mesh` (default, or the task's own mesh: `population_program`)."""
        return self.population_program if mesh is None or mesh is self.mesh else self.program_on(mesh)

    def hypers(self, rows: int):
        """The task's hyperparameters (its train config's traced settings) for `rows` members: leaves [rows]."""
        return stack([hyper_of(self.train_config)] * rows)

    @property
    def name(self) -> str:
        return f"{self.cfg.env}@{self.timesteps}"


def make_population_program(train, fitness_name: str, train_config: TrainConfig, mesh):
    """(population [M], keys [M, S, 2], hypers [M]) -> fitness [M, S]: members split over the mesh (shard_map),
    each device training its M / n members x S seeds with vmap; the result is gathered on every device. Each
    member has its own hyperparameters (`train(key, meta, hyper)`), so the ES can evolve them too."""

    def local(population, keys, hypers):  # this device's members
        def run_fitness(key, meta, hyper):
            return reduce_fitness(fitness_name, train(key, meta, hyper).metrics, train_config.final_window)

        return jax.vmap(lambda meta, k, h: jax.vmap(run_fitness, (0, None, None))(k, meta, h))(
            population, keys, hypers)

    spec = jax.sharding.PartitionSpec(AXIS)
    sharded = jax.shard_map(local, mesh=mesh, in_specs=(spec, spec, spec), out_specs=spec, check_vma=False)
    return jax.jit(sharded, out_shardings=hosts.replicated(mesh))


# (static train config, env, objective, fitness, mesh) -> population program: runs in one process (tests,
# benchmarks, a resume) reuse the traced and compiled program instead of building it again; configs that differ
# only in traced settings share it.
_PROGRAMS: dict = {}


def population_program(train_config: TrainConfig, env_id: str, objective: Objective, fitness: str, mesh):
    """The population program (`make_population_program`) of `env_id` trained with `objective` under the static
    settings of `train_config`, on `mesh`: built once per process for each of these (`_PROGRAMS`)."""
    from metadisco.envs import make_env
    from metadisco.trainers import make_trainer

    cache_key = (static_of(train_config), env_id, objective, fitness, mesh)
    if cache_key not in _PROGRAMS:
        train = make_trainer(static_of(train_config), make_env(env_id), objective).train
        _PROGRAMS[cache_key] = make_population_program(train, fitness, train_config, mesh)
    return _PROGRAMS[cache_key]


def build_tasks(cfgs: tuple[TaskConfig, ...], objective: Objective, fitness: str, mesh, where: str = "tasks"
                ) -> list[list[Task]]:
    """For each config task, one `Task` per training length."""
    from metadisco.envs import runs_on_one_device
    from metadisco.parallel.sharding import make_mesh
    from metadisco.runs.seeds import resolve_config

    first_device = make_mesh(list(mesh.devices.flat)[:1])
    out = []
    for i, cfg in enumerate(cfgs):
        task_mesh = first_device if runs_on_one_device(cfg.env) else mesh
        lengths = []
        for timesteps in cfg.lifetimes:
            try:
                train_config = resolve_config(cfg.env, cfg.preset, cfg.train, timesteps, objective.algorithm)
            except UserError as e:
                raise UserError(f"{where}.{i} ({cfg.env}): {e}") from None
            if fitness == "eval_return" and not train_config.eval_episodes:  # the fitness needs them played
                train_config = replace(train_config, eval_episodes=DEFAULT_EVAL_EPISODES)
            program_on = partial(population_program, train_config, cfg.env, objective, fitness)
            steps = train_config.num_updates * train_config.batch_size
            lengths.append(Task(i, cfg, timesteps, train_config, program_on(task_mesh), steps, task_mesh,
                                program_on))
        out.append(lengths)
    return out


def with_objective(task: Task, objective: Objective, fitness: str) -> Task:
    """`task` (the same env, length and settings) trained with another objective: a separate control's program
    (`metadisco.meta.problem.separate_control`); the programs are built once per process (`population_program`)."""
    program_on = partial(population_program, task.train_config, task.cfg.env, objective, fitness)
    return replace(task, population_program=program_on(task.mesh), program_on=program_on)


def sample_tasks(key: jax.Array, tasks: list[list[Task]], per_generation: int,
                 scale: Mapping[str, tuple[float, float]] | None = None) -> list[Task]:
    """The tasks one generation trains on: `per_generation` config tasks (0: all) drawn without replacement, in
    config order, each at a training length drawn uniformly, and with `scale` ({setting: (lo, hi)}) each at
    drawn values of those traced settings (`draw_settings`). With every task at one length, `per_generation`
    0 and no `scale` this is every task, and no randomness is used."""
    if per_generation == 0 and all(len(t) == 1 for t in tasks):
        chosen_tasks = [t[0] for t in tasks]
    else:
        sample_key = jax.random.fold_in(key, TASK_SAMPLE_STREAM)
        task_key, length_key = jax.random.split(sample_key)
        chosen = range(len(tasks))
        if per_generation:
            chosen = sorted(np.asarray(jax.random.choice(task_key, len(tasks), (per_generation,),
                                                         replace=False)).tolist())
        picks = np.asarray(jax.random.randint(length_key, (len(tasks),), 0, 1 << 30))
        chosen_tasks = [tasks[i][int(picks[i]) % len(tasks[i])] for i in chosen]
    return [draw_settings(key, task, scale) for task in chosen_tasks] if scale else chosen_tasks


def draw_settings(key: jax.Array, task: Task, scale: Mapping[str, tuple[float, float]]) -> Task:
    """`task` with each traced setting in `scale` at the task's own value times a factor drawn log-uniformly
    in [lo, hi] from the generation's `key` and the task's index, so a task's draw does not depend on which
    other tasks the generation drew, nor on its training length. Every row of the generation's population
    program (members and the PPO control) trains at the drawn values; the compiled program is the same, since
    traced settings are inputs. Hyperparameter randomisation in the spirit of the reference's lifetime
    sampling: an objective scored over a range of step sizes cannot win by simply stepping harder or softer."""
    draw_key = jax.random.fold_in(jax.random.fold_in(key, TASK_SETTINGS_STREAM), task.index)
    uniform = np.asarray(jax.random.uniform(draw_key, (len(scale),)), np.float64)  # one per setting, in [0, 1)
    values = {}
    for u, (name, (lo, hi)) in zip(uniform, scale.items(), strict=True):
        factor = float(np.exp(np.log(lo) + u * (np.log(hi) - np.log(lo))))
        values[name] = task.train_config.setting(name) * factor
    return replace(task, train_config=with_values(task.train_config, values, f"sampling.scale ({task.name})"))
