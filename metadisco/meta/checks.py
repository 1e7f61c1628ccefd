"""Every value of a meta-training config, checked once where the config enters (`MetaConfig.validate`).

Names (envs, fitness, start, objective pieces), types, finiteness (`NaN` fails every comparison, so it is
tested for first), ranges, and sizes against this machine's memory: population x seeds training runs per
task, and population x meta-parameters. Each failure is a one-line `UserError` naming the key.
"""

from __future__ import annotations

from metadisco.errors import UserError, unknown_name_error
from metadisco.limits import check_population_fits, check_trainer_fits
from metadisco.validate import INT32_MAX, check_finite_tree, check_float, check_int, check_seed

# Generation g's keys are fold_in(key, g); the streams 2**31 - 3 .. 2**31 - 1 are reserved for evaluation,
# start point and initialisation (meta/loop.py), so generations stay far below them.
MAX_GENERATIONS = 1_000_000_000


def check_meta_config(config) -> None:
    from metadisco.envs import check_env_id
    from metadisco.fitness import FITNESS_FNS
    from metadisco.meta.start import STARTS

    if not config.tasks:
        raise UserError("config key tasks needs at least one task")
    population = check_int("strategy.population_size", config.strategy.population_size, 1, INT32_MAX)
    for i, task in enumerate(config.tasks):
        check_env_id(task.env)
        if task.timesteps <= 0 or task.seeds <= 0:
            raise UserError(f"tasks.{i}: timesteps and seeds must be positive, got {task.timesteps}, {task.seeds}")
        check_int(f"tasks.{i}.seeds", task.seeds, 1, INT32_MAX)
        if task.baseline is not None:
            baseline = check_float(f"tasks.{i}.baseline", task.baseline)
            if baseline == 0:
                raise UserError(f"tasks.{i}.baseline divides the fitness, so it must not be 0")
        train_config = _task_train_config(i, task)
        check_trainer_fits(train_config, population * task.seeds,
                           f"tasks.{i}: population_size {population:,} x seeds {task.seeds:,}")
    for env_id in config.held_out_envs:
        check_env_id(env_id)
    overlap = sorted({t.env for t in config.tasks} & set(config.held_out_envs))
    if overlap:
        raise UserError(f"env {overlap[0]!r} is both a task and held out; held-out envs must not be trained on")
    if config.fitness not in FITNESS_FNS:
        raise unknown_name_error("fitness", config.fitness, list(FITNESS_FNS))
    if config.generations < 0:
        raise UserError(f"generations must be >= 0, got {config.generations}")
    check_int("generations", config.generations, 0, MAX_GENERATIONS)
    check_seed("seed", config.seed)
    for name in ("eval_every", "checkpoint_every", "baseline_seeds"):
        if getattr(config, name) <= 0:
            raise UserError(f"{name} must be a positive integer, got {getattr(config, name)}")
        check_int(name, getattr(config, name), 1, INT32_MAX)
    if config.start not in STARTS:
        raise unknown_name_error("start", config.start, STARTS)
    check_float("start_scale", config.start_scale, 0.0)
    _check_strategy(config.strategy)
    meta_parameters = _objective_size(config.objective)
    check_population_fits(population, meta_parameters, f"strategy.population_size {population:,}")


def _task_train_config(i: int, task):
    """The task's trainer config, resolved and validated now (not when its turn comes to compile)."""
    from metadisco.runs import resolve_config

    try:
        return resolve_config(task.env, task.preset, task.overrides(), task.timesteps)
    except UserError as e:
        raise UserError(f"tasks.{i} ({task.env}): {e}") from None


def _check_strategy(s) -> None:
    if s.sigma_init is not None:
        check_float("strategy.sigma_init", s.sigma_init, 0.0, lo_open=True)
    check_float("strategy.sigma_decay", s.sigma_decay, 0.0, 1.0, lo_open=True)
    check_float("strategy.sigma_limit", s.sigma_limit, 0.0)
    if s.lr is not None:
        check_float("strategy.lr", s.lr, 0.0, lo_open=True)
    check_float("strategy.lr_decay", s.lr_decay, 0.0, 1.0, lo_open=True)
    check_float("strategy.lr_limit", s.lr_limit, 0.0)
    check_finite_tree("strategy.settings", s.settings)


def _objective_size(spec) -> int:
    """Build the objective from its spec (kinds, options and sizes are checked there); its meta-parameter
    count, from shapes alone (nothing is allocated)."""
    import jax
    import numpy as np

    from metadisco.objectives import Objective

    if not isinstance(spec, dict):
        raise UserError(f"config key objective must be a mapping of slots, got {type(spec).__name__}")
    try:
        objective = Objective.from_spec(spec)
    except UserError as e:
        raise UserError(f"objective: {e}") from None
    shapes = jax.eval_shape(objective.zero_meta)
    return int(sum(np.prod(x.shape, dtype=np.int64) for x in jax.tree.leaves(shapes)))
