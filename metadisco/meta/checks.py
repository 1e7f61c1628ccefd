"""Every value of a meta-training config, checked once where the config enters (`MetaConfig.validate`).

Names (envs, fitness, start, objective pieces), types, finiteness (`NaN` fails every comparison, so it is
tested for first), ranges, and sizes against this machine's memory: population x seeds training runs per
task, and population x meta-parameters. Each failure is a one-line `UserError` naming the key.
"""

from __future__ import annotations

from metadisco.core.coerce import INT32_MAX, check_finite_tree, check_float, check_int, check_seed
from metadisco.core.errors import UserError, unknown_name_error
from metadisco.core.limits import check_population_fits, check_trainer_fits

# Generation g's keys are fold_in(key, g); the streams 2**31 - 3 .. 2**31 - 1 are reserved for evaluation,
# start point and initialisation (meta/loop.py), so generations stay far below them.
MAX_GENERATIONS = 1_000_000_000


def check_meta_config(config) -> None:
    from metadisco.envs import check_env_id, split_budget
    from metadisco.meta.start import STARTS
    from metadisco.trainers.metrics import FITNESS_FNS

    if not config.tasks:
        raise UserError("config key tasks needs at least one task")
    from metadisco.meta.problem import separate_control
    from metadisco.trainers.algorithm import baseline_of

    if baseline_of(config.objective) == "none" and config.normalise == "paired":
        control = separate_control(config.objective)
        if control is None:
            raise UserError("normalise: paired scores members against a handcrafted control, and this objective has "
                            "none (its algorithm names no control); use normalise: fixed (fitness / a baseline's "
                            "return)")
        if config.hyper:
            raise UserError(f"a hyper section evolves settings beside the objective, and this objective's paired "
                            f"control ({baseline_of(control)}) trains in a program of its own at the tasks' settings; "
                            "leave the hyper section out, or use normalise: fixed")
    population = check_int("strategy.population_size", config.strategy.population_size, 1, INT32_MAX)
    from metadisco.meta.tuning import Grid

    grid_size = Grid.of(config.fitness.tune).size  # rows per member: one per grid point
    _check_tasks(config.tasks, "tasks", population * grid_size, config.objective.algorithm)
    _check_tasks(config.validation.tasks, "validation.tasks", 2, config.objective.algorithm)
    held_out = {check_env_id(split_budget(spec)[0]) for spec in config.held_out_envs}
    _check_held_out_budgets(config.held_out_envs, config.objective.algorithm)
    train_envs, valid_envs = {t.env for t in config.tasks}, {t.env for t in config.validation.tasks}
    for a, b, what in ((train_envs, held_out, "both a task and held out; held-out envs must not be trained on"),
                       (valid_envs, held_out, "both a validation env and held out; held-out envs must not choose "
                                              "the objective"),
                       (train_envs, valid_envs, "both a task and a validation env; validation needs envs the ES "
                                                "does not train on")):
        overlap = sorted(set(a) & set(b))
        if overlap:
            raise UserError(f"env {overlap[0]!r} is {what}")
    from metadisco.meta.config import COMBINES, NORMALISERS

    if config.normalise not in NORMALISERS:
        raise unknown_name_error("normalise", config.normalise, NORMALISERS)
    if config.combine not in COMBINES:
        raise unknown_name_error("combine", config.combine, COMBINES)
    k = config.sampling.tasks_per_generation
    if not 0 <= k <= len(config.tasks):
        raise UserError(f"sampling.tasks_per_generation must be in 0..{len(config.tasks)} (the number of tasks; "
                        f"0 = all), got {k}")
    _check_scale(config.sampling.scale, config.tasks, config.objective.algorithm)
    check_int("validation.every", config.validation.every, 1, INT32_MAX)
    if config.validation.tasks and config.normalise != "paired":
        raise UserError("validation needs normalise: paired (validation scores are relative to PPO)")
    if config.fitness.score not in FITNESS_FNS:
        raise unknown_name_error("fitness", config.fitness.score, list(FITNESS_FNS))
    _check_tune(config)
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
    if config.hyper:
        _check_hyper(config)
    meta_parameters = _objective_size(config.objective) + len(config.hyper.searched)
    check_population_fits(population, meta_parameters, f"strategy.population_size {population:,}")


def _check_tune(config) -> None:
    """`fitness.tune` names traced settings of every task's and validation task's trainer at every length, every
    grid point is a config that trainer takes, and no tuned setting is also drawn (`sampling.scale`) or evolved
    (`hyper:`): each would override the other. Said before anything compiles."""
    from metadisco.meta.tuning import Grid
    from metadisco.runs.seeds import resolve_config
    from metadisco.trainers.hyper import check_traced, with_values

    tune = config.fitness.tune
    if not tune:
        return
    for other, what in ((config.sampling.scale, "drawn by sampling.scale"), (config.hyper.names, "evolved by hyper")):
        both = [name for name in tune if name in other]
        if both:
            raise UserError(f"fitness.tune: {both[0]} is also {what}; tune a setting or vary it another way, not both")
    grid = Grid.of(tune)
    algorithm = config.objective.algorithm
    for where, tasks in (("tasks", config.tasks), ("validation.tasks", config.validation.tasks)):
        for i, task in enumerate(tasks):
            for timesteps in task.lifetimes:
                train_config = resolve_config(task.env, task.preset, task.train, timesteps, algorithm)
                at = f"fitness.tune on {where}.{i} ({task.env})"
                check_traced(train_config, tune, at)
                for point in grid.points:
                    with_values(train_config, point, at)


def _check_scale(scale, tasks, algorithm: str) -> None:
    """`sampling.scale` names traced settings of every task's trainer, and both ends of each range give valid
    settings on every task (gamma x 1.2 > 1 is said now, not at the generation that draws it)."""
    from metadisco.runs.seeds import resolve_config
    from metadisco.trainers.hyper import check_traced, with_values

    for i, task in enumerate(tasks if scale else ()):
        where = f"sampling.scale on tasks.{i} ({task.env})"
        train_config = resolve_config(task.env, task.preset, task.train, task.lifetimes[0], algorithm)
        check_traced(train_config, scale, where)
        for end in (0, 1):
            with_values(train_config, {name: train_config.setting(name) * bounds[end]
                                       for name, bounds in scale.items()}, where)


def _check_held_out_budgets(specs, algorithm: str) -> None:
    """Each held-out 'ID@TIMESTEPS' must give its family's preset at least one update, as `evaluate` will run it;
    said now, not after the meta-training hour."""
    from metadisco.envs import split_budget
    from metadisco.runs.seeds import resolve_config

    for i, spec in enumerate(specs):
        env, budget = split_budget(spec)
        try:
            resolve_config(env, None, {}, budget, algorithm)
        except UserError as e:
            raise UserError(f"held_out_envs.{i} ({spec}): {e}") from None


def _check_tasks(tasks, where: str, runs_per_seed: int, algorithm: str) -> None:
    """Env ids, seeds, baselines and every training length of each task; each length's trainer config is
    resolved now (not when its turn comes to compile) and checked against memory."""
    from metadisco.envs import check_env_id
    from metadisco.runs.seeds import resolve_config

    for i, task in enumerate(tasks):
        check_env_id(task.env)
        lifetimes = task.lifetimes
        if not lifetimes or min(lifetimes) <= 0 or task.seeds <= 0:
            raise UserError(f"{where}.{i}: timesteps and seeds must be positive, got {task.timesteps}, {task.seeds}")
        if len(set(lifetimes)) != len(lifetimes):
            raise UserError(f"{where}.{i}: timesteps lists {lifetimes}, with repeats; list each length once")
        check_int(f"{where}.{i}.seeds", task.seeds, 1, INT32_MAX)
        if task.baseline is not None:
            baseline = check_float(f"{where}.{i}.baseline", task.baseline)
            if baseline == 0:
                raise UserError(f"{where}.{i}.baseline divides the fitness, so it must not be 0")
        for timesteps in lifetimes:
            try:
                train_config = resolve_config(task.env, task.preset, task.train, timesteps, algorithm)
            except UserError as e:
                raise UserError(f"{where}.{i} ({task.env}): {e}") from None
            check_trainer_fits(train_config, runs_per_seed * task.seeds,
                               f"{where}.{i}: {runs_per_seed:,} members x seeds {task.seeds:,}")


def _check_hyper(config) -> None:
    """The `hyper:` section against every task's (and validation task's) trainer config at every length."""
    from metadisco.meta.hyper_search import check_against_tasks
    from metadisco.runs.seeds import resolve_config

    algorithm = config.objective.algorithm
    resolved = [(f"{where}.{i} ({task.env})", resolve_config(task.env, task.preset, task.train, timesteps, algorithm))
                for where, tasks in (("tasks", config.tasks), ("validation.tasks", config.validation.tasks))
                for i, task in enumerate(tasks) for timesteps in task.lifetimes]
    check_against_tasks(config.hyper, resolved, algorithm)


def _check_strategy(s) -> None:
    if s.sigma_init is not None:
        check_float("strategy.sigma_init", s.sigma_init, 0.0, lo_open=True)
    check_float("strategy.sigma_decay", s.sigma_decay, 0.0, 1.0, lo_open=True)
    check_float("strategy.sigma_limit", s.sigma_limit, 0.0)
    if s.lr is not None:
        check_float("strategy.lr", s.lr, 0.0, lo_open=True)
    check_float("strategy.lr_decay", s.lr_decay, 0.0, 1.0, lo_open=True)
    check_float("strategy.lr_limit", s.lr_limit, 0.0)
    check_finite_tree("strategy.settings", dict(s.settings))


def _objective_size(objective) -> int:
    """The objective's meta-parameter count (its kinds, options and sizes were checked when it was read), from
    shapes alone (nothing is allocated)."""
    import jax
    import numpy as np

    shapes = jax.eval_shape(objective.zero_meta)
    return int(sum(np.prod(x.shape, dtype=np.int64) for x in jax.tree.leaves(shapes)))
