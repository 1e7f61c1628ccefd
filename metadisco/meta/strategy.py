"""An evosax strategy by name (any key of `evosax.algorithms.algorithms`) with its settings.

evosax 0.3 splits a strategy's settings in two: constructor arguments (optimizer, std schedule, fitness
shaping, antithetic sampling, ...) and a `Params` dataclass (std_init, crossover_rate, ...). `make_strategy`
maps the config's common settings onto whichever of the two the strategy has and rejects the rest with the
names that would work.

`Strategy` hides the two families' differences: distribution-based strategies have a mean; for
population-based ones (GAs, PSO, DE) the "mean" is the best member found so far, and the initial population is
the start point copied `population_size` times.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax

from metadisco.core.errors import UserError, unknown_name_error
from metadisco.meta.config import StrategyConfig

# Constructor arguments metadisco sets itself, or that are not plain settings.
_MANAGED_ARGS = {"self", "population_size", "solution", "optimizer", "std_schedule", "fitness_shaping_fn",
                 "metrics_fn", "use_antithetic_sampling"}
OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd}


def algorithms() -> dict[str, type]:
    from evosax.algorithms import algorithms as registry

    return dict(registry)


def fitness_shaping_fns() -> dict:
    from evosax.core import fitness_shaping as fs

    return {"identity": fs.identity_fitness_shaping_fn, "centered_rank": fs.centered_rank_fitness_shaping_fn,
            "standardize": fs.standardize_fitness_shaping_fn, "normalize": fs.normalize_fitness_shaping_fn,
            "weights": fs.weights_fitness_shaping_fn}


def schedule(init: float, decay: float, limit: float):
    """g -> max(init * decay**g, limit) (decay <= 1) as an optax schedule."""
    if decay == 1.0:
        return optax.constant_schedule(init)
    return optax.exponential_decay(init, transition_steps=1, decay_rate=decay, end_value=limit)


@dataclass(frozen=True)
class Strategy:
    """An evosax strategy, its `Params`, and the start point (a meta-parameter pytree)."""

    es: Any
    params: Any
    start: Any
    population_based: bool

    @property
    def population_size(self) -> int:
        return self.es.population_size

    def init(self, key: jax.Array):
        if self.population_based:
            # The start point copied P times, all with the worst fitness: the first ask mutates the start.
            population = jax.tree.map(lambda x: jnp.broadcast_to(x, (self.population_size, *x.shape)), self.start)
            return self.es.init(key, population, jnp.full((self.population_size,), jnp.inf), self.params)
        return self.es.init(key, self.start, self.params)

    def ask(self, key, state):
        return self.es.ask(key, state, self.params)

    def tell(self, key, population, fitness, state):
        state, _ = self.es.tell(key, population, fitness, state, self.params)
        return state

    def solution(self, state):
        """The meta-parameters the run stands for: the ES mean, or a GA's best member so far."""
        if self.population_based:
            return self.es._unravel_solution(state.best_solution)
        return self.es.get_mean(state)


def strategy_setting_names(name: str) -> list[str]:
    """The `settings:` keys strategy `name` accepts."""
    cls = algorithms()[name]
    args = [p for p in inspect.signature(cls.__init__).parameters if p not in _MANAGED_ARGS]
    probe = cls(population_size=4, solution=jnp.zeros(2))
    return sorted(set(args) | {f.name for f in dataclasses.fields(probe.default_params)})


def make_strategy(cfg: StrategyConfig, start) -> Strategy:
    """Build the strategy named in `cfg` around the start point `start` (a pytree with at least one leaf)."""
    registry = algorithms()
    if cfg.name not in registry:
        raise unknown_name_error("strategy", cfg.name, sorted(registry))
    cls = registry[cfg.name]
    if not jax.tree.leaves(start):
        raise UserError("the objective has nothing to evolve: give a learnable piece (e.g. drift kind lpo)")
    args = set(inspect.signature(cls.__init__).parameters)
    probe = cls(population_size=max(2, cfg.population_size + cfg.population_size % 2), solution=start)
    param_names = {f.name for f in dataclasses.fields(probe.default_params)}
    settable = sorted(args - _MANAGED_ARGS)

    kwargs: dict[str, Any] = {}
    param_changes: dict[str, Any] = {}
    for key, value in cfg.settings.items():
        if key in param_names:
            param_changes[key] = value
        elif key in settable:
            kwargs[key] = value
        else:
            known = sorted(set(settable) | param_names)
            raise UserError(f"strategy {cfg.name} has no setting {key!r}; its settings: "
                            f"{', '.join(known) or 'none'} (and the common ones: sigma_init, lr, ...)")

    def unsupported(setting: str, needs: str):
        return UserError(f"strategy {cfg.name} has no {needs}, so strategy.{setting} cannot be set; "
                         f"its settings: {', '.join(sorted(set(settable) | param_names)) or 'none'}")

    if cfg.sigma_init is not None:
        if "std_schedule" in args:
            kwargs["std_schedule"] = schedule(cfg.sigma_init, cfg.sigma_decay, cfg.sigma_limit)
        elif "std_init" in param_names:
            if cfg.sigma_decay != 1.0:
                raise unsupported("sigma_decay", "sigma schedule (it adapts sigma itself)")
            param_changes["std_init"] = cfg.sigma_init
        else:
            raise unsupported("sigma_init", "sigma")
    elif cfg.sigma_decay != 1.0:
        raise UserError("strategy.sigma_decay needs strategy.sigma_init")
    if cfg.lr is not None:
        if "optimizer" not in args:
            raise unsupported("lr", "learning rate (no optimizer)")
        if cfg.optimizer not in OPTIMIZERS:
            raise unknown_name_error("ES optimizer", cfg.optimizer, list(OPTIMIZERS))
        kwargs["optimizer"] = OPTIMIZERS[cfg.optimizer](schedule(cfg.lr, cfg.lr_decay, cfg.lr_limit))
    elif cfg.lr_decay != 1.0:
        raise UserError("strategy.lr_decay needs strategy.lr")
    if cfg.fitness_shaping is not None:
        shapers = fitness_shaping_fns()
        if cfg.fitness_shaping not in shapers:
            raise unknown_name_error("fitness shaping", cfg.fitness_shaping, list(shapers))
        if cfg.fitness_shaping == "weights" and "weights" not in param_names:
            raise UserError(f"strategy {cfg.name} has no weights; use centered_rank, standardize, normalize "
                            "or identity fitness shaping")
        kwargs["fitness_shaping_fn"] = shapers[cfg.fitness_shaping]
    if cfg.antithetic is not None:
        if "use_antithetic_sampling" not in args:
            raise unsupported("antithetic", "antithetic sampling")
        kwargs["use_antithetic_sampling"] = cfg.antithetic
    if kwargs.get("use_antithetic_sampling", "use_antithetic_sampling" in args) and cfg.population_size % 2:
        raise UserError(f"antithetic sampling needs an even strategy.population_size, got {cfg.population_size}")

    try:
        es = cls(population_size=cfg.population_size, solution=start, **kwargs)
    except (TypeError, ValueError, AssertionError) as e:
        raise UserError(f"strategy {cfg.name} rejected its settings: {e or type(e).__name__}") from None
    params = es.default_params
    if param_changes:
        params = params.replace(**{k: jnp.asarray(v, dtype=jnp.result_type(getattr(params, k)))
                                   if hasattr(getattr(params, k), "dtype") else v
                                   for k, v in param_changes.items()})
    from evosax.algorithms.population_based.base import PopulationBasedAlgorithm

    return Strategy(es, params, start, isinstance(es, PopulationBasedAlgorithm))
