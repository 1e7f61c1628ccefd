"""The baselines a meta-training run scores against, measured in one place.

- fixed normalisation (`normalise: fixed`, the default): with several tasks or any `tasks.*.baseline`, each
  task's fitness is divided by |PPO's fitness| on that env (`normalisers`): from the config, else a checkpoint,
  else measured once by training PPO for `baseline_seeds` seeds.
- paired normalisation (`normalise: paired`): every member scores 1 + (member - PPO on the same seed keys) /
  ppo_gap, with ppo_gap = PPO - random (OPEN, Goldie et al., NeurIPS 2024; Agarwal et al., NeurIPS 2021)
  measured per training task on reference seeds (`scales`), and the return of a uniformly random policy per env
  (`random`, the zero point; deterministic, so measured again rather than stored).

A checkpoint stores `Baselines.cached()` (the normalisers or the scales), so a resumed run trains against
exactly the figures the uninterrupted run used. Across runs, every measured figure goes through the baseline
cache (`metadisco.runs.baseline_cache`, on from the command line): a second run with the same settings reads PPO's
scores back instead of training PPO, bit for bit what it would have measured. That includes PPO's control on the
fresh seeds the ES mean is scored on (`MetaProblem.control_score`, keyed by `ppo_settings`), which a resumed run
would otherwise train again at its first scoring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from metadisco.core.errors import UserError
from metadisco.core.schema import plain_data
from metadisco.core.stats import seed_mean
from metadisco.meta import paired
from metadisco.meta.fitness import ppo_gap
from metadisco.parallel import hosts, sharding
from metadisco.runs import baseline_cache
from metadisco.trainers.algorithm import get_algorithm
from metadisco.trainers.config import config_to_dict
from metadisco.trainers.metrics import reduce_fitness


@dataclass(frozen=True)
class Baselines:
    normalisers: dict[str, float] = field(default_factory=dict)  # fixed: PPO's fitness per env
    scales: dict[str, float] = field(default_factory=dict)  # paired: ppo_gap per training task name
    random: dict[str, float] = field(default_factory=dict)  # paired: a random policy's return per env
    paired: bool = False

    def normalisers_of(self, tasks) -> list[float | None]:
        """Each task's normaliser (None: not normalised), in the order of `tasks`."""
        return [self.normalisers.get(t.cfg.env) for t in tasks]

    def cached(self) -> dict[str, float]:
        """What a checkpoint keeps (`Checkpoint.normalisers`)."""
        return self.scales if self.paired else self.normalisers

    def to_json(self) -> dict | None:
        """baselines.json of a run directory (None: nothing to write)."""
        if self.paired:
            return {"random_policy": self.random, "baseline_gap": self.scales}  # older files: "ppo_gap"
        return self.normalisers or None


def _say_nothing(message: str) -> None:
    pass


def measure_random(problem) -> dict[str, float]:
    """Return of a uniformly random policy on every training and validation env of `problem`
    (`metadisco.meta.problem.MetaProblem`): paired normalisation's zero point."""
    from metadisco.runs.random_policy import cached_random_return

    out = {}
    for task in problem.tasks + problem.valid_tasks:
        env = task.cfg.env
        if env not in out:
            value = cached_random_return(env, seed=problem.config.seed)
            out[env] = value if np.isfinite(value) else 0.0  # no episode ends at random: 0 is the zero point
    return out


def ppo_settings(problem, task, keys: np.ndarray, rows: int, devices: int | None = None) -> dict:
    """What determines PPO's (the control's) mean return on `task` over the seed rows `keys` in a call of `rows`
    rows of `problem`'s program on `devices` devices (default: the run's): the baseline cache's key for it."""
    return {"env": task.cfg.env, "timesteps": task.timesteps, "train": config_to_dict(task.train_config),
            "fitness": problem.config.fitness.score, "objective": problem.config.objective.to_spec(),
            "hyper": problem.hyper.to_plain(), "rows": rows,
            "devices": problem.devices if devices is None else devices, "keys": baseline_cache.digest(keys)}


def measure_scales(problem, random: dict[str, float], cached: dict[str, float],
                   say: Callable[[str], None] = _say_nothing) -> dict[str, float]:
    """Per training task (env and length): `ppo_gap(PPO, random)`, PPO trained on every row of the
    population program with distinct reference seeds; from `cached` (a checkpoint) when there."""
    out = {}
    rows = problem.population_rows()
    control = problem.control_name  # the objective at zero meta-parameters (PPO, DPO, PQN, DQN), or an update
    # rule's actor-critic, trained in a program of its own (`MetaProblem.control_task`)
    for task in problem.tasks:
        if task.name in cached:
            out[task.name] = float(cached[task.name])
            continue
        keys = problem.reference_keys(task)

        def measure(task=task, keys=keys):
            say(f"measuring {control}'s reference score on {task.name} ({rows} x {task.cfg.seeds} runs)")
            population = paired.pairs(problem.control, problem.control, 0, problem.devices, rows)[0]
            return paired.run_mean(problem.train_rows(problem.control_task(task), hosts.to_global(population,
                                                                                               problem.mesh), keys))

        ppo = baseline_cache.cached("ppo_reference", ppo_settings(problem, task, keys, rows), measure,
                                    baseline_cache.cacheable(task.cfg.env, problem.config.objective),
                                    lambda path, name=task.name: say(f"{control}'s reference score on {name}: from "
                                                                     f"the baseline cache ({path.name})"))
        if not np.isfinite(ppo):
            raise UserError(f"{control} finishes no episode in any run on {task.name}; train longer (timesteps)")
        out[task.name] = float(ppo_gap(ppo, random[task.cfg.env]))
    return out


def measure_normalisers(problem, cached: dict[str, float], say: Callable[[str], None] = _say_nothing
                        ) -> dict[str, float]:
    """Baseline returns per task env when fitness needs normalising (several tasks, or any baseline set):
    from the config, else the cache, else measured once by training PPO."""
    import jax

    from metadisco.objectives import BUILTIN_OBJECTIVES
    from metadisco.runs.seeds import train_seeds

    config = problem.config
    cfgs = config.tasks
    if problem.paired or (len(cfgs) == 1 and cfgs[0].baseline is None):
        return {}
    out = {}
    for task in problem.tasks:
        env = task.cfg.env
        if env in out:  # measured at its first training length
            continue
        if task.cfg.baseline is not None:
            out[env] = float(task.cfg.baseline)
        elif env in cached:
            out[env] = float(cached[env])
        else:
            # The return of the algorithm's handcrafted control (`Algorithm.control`: PPO's, PQN's for a TD
            # objective, DQN's); a control of another algorithm (a learned update rule's is PPO) trains with that
            # algorithm's preset for the env at the task's length.
            baseline = BUILTIN_OBJECTIVES[get_algorithm(task.train_config.algorithm).control]
            algorithm = baseline.algorithm
            train_config = task.train_config
            if algorithm != task.train_config.algorithm:
                from metadisco.runs.seeds import resolve_config

                train_config = resolve_config(env, None, {}, task.train_config.total_timesteps, algorithm)

            def measure(env=env, algorithm=algorithm, baseline=baseline, train_config=train_config):
                say(f"measuring the {algorithm.upper()} baseline on {env} ({config.baseline_seeds} seeds)")
                result = train_seeds(env, baseline, baseline.zero_meta(), train_config, config.baseline_seeds,
                                     config.seed)
                values = np.asarray(reduce_fitness(config.fitness.score, result.metrics, train_config.final_window))
                return float(seed_mean(values, None, diverged="skip"))

            settings = {"env": env, "algorithm": algorithm, "train": config_to_dict(train_config),
                        "fitness": config.fitness.score, "seeds": config.baseline_seeds, "seed": config.seed,
                        "devices": len(sharding.devices_for(config.baseline_seeds, jax.local_devices()))}
            value = baseline_cache.cached(
                "baseline_return", settings, measure, baseline_cache.cacheable(env),
                lambda path, env=env, a=algorithm: say(f"the {a.upper()} baseline on {env}: from the baseline cache "
                                                       f"({path.name})"))
            if not np.isfinite(value) or value == 0:
                raise UserError(f"the {algorithm.upper()} baseline on {env} is {value}; give tasks.*.baseline in "
                                "the config")
            out[env] = value
    return out


def measure_baselines(problem, cached: dict[str, float] | None = None, say: Callable[[str], None] = _say_nothing
                      ) -> Baselines:
    """Every baseline `problem`'s fitness needs, from `cached` (a checkpoint's `Baselines.cached()`) where it has
    them; the rest measured (PPO training runs, compiled once)."""
    cached = cached or {}
    if not problem.paired:
        return Baselines(normalisers=measure_normalisers(problem, cached, say))
    random = measure_random(problem)
    return Baselines(random=random, scales=measure_scales(problem, random, cached, say), paired=True)



def _initial_score(problem, kind: str, point, baselines: Baselines, tasks, keys, score, say, message: str
                   ) -> float | None:
    """`score()` (a float or None) of the ES's initial point `point` on `tasks` with seed `keys`, through the
    baseline cache: like the baselines, a pure function of the config and the device count measured before the
    first generation (with the drift's output layer at zero the point is PPO itself)."""
    import jax

    settings = {"point": [baseline_cache.digest(x) for x in jax.tree.leaves(point)],
                "objective": problem.config.objective.to_spec(), "hyper": problem.hyper.to_plain(),
                "fitness": plain_data(problem.config.fitness),  # with a tuning grid, the grid too
                "normalise": problem.config.normalise, "rows": problem.population_rows(),
                "population": problem.population_size, "devices": problem.devices,
                "baselines": {"normalisers": baselines.normalisers, "scales": baselines.scales,
                              "random": baselines.random},
                "tasks": [{"env": t.cfg.env, "timesteps": t.timesteps, "train": config_to_dict(t.train_config),
                           "keys": baseline_cache.digest(k)} for t, k in zip(tasks, keys, strict=True)]}

    def measure():
        say(message)
        value = score()
        return float("nan") if value is None else value

    value = baseline_cache.cached(
        kind, settings, measure, all(baseline_cache.cacheable(t.cfg.env, problem.config.objective) for t in tasks),
        lambda path: say(f"{kind.replace('_', ' ')} of the initial objective: from the baseline cache ({path.name})"))
    return None if np.isnan(value) else value


def initial_fitness(problem, point, baselines: Baselines, say: Callable[[str], None] = _say_nothing) -> float | None:
    """`problem.mean_fitness(point, baselines)` (fresh seeds of the training tasks), through the baseline cache."""
    keys = [problem.fresh_keys(t) for t in problem.tasks] if problem.paired else problem._mean_keys()
    return _initial_score(problem, "initial_fitness", point, baselines, problem.tasks, keys,
                          lambda: problem.mean_fitness(point, baselines), say,
                          "evaluating the initial objective on fresh seeds (compiling first)")


def initial_validation(problem, point, baselines: Baselines, say: Callable[[str], None] = _say_nothing
                       ) -> float | None:
    """`problem.validation(point, baselines)[0]` (the validation tasks), through the baseline cache."""
    keys = [problem.validation_keys(t) for t in problem.valid_tasks]
    return _initial_score(problem, "initial_validation", point, baselines, problem.valid_tasks, keys,
                          lambda: problem.validation(point, baselines)[0], say, "validating the initial objective")
