"""A synthetic meta-training problem with a known optimum: the outer loop and its strategies tested in seconds.

`GenerationStep(config, problem=QuadraticProblem(optimum, population_size))` runs the real ask / tell of the
config's strategy against fitness(x) = -mean((x - optimum)^2) of each ES point x (its leaves raveled in
`jax.flatten_util.ravel_pytree`'s order), with optional Gaussian noise of a given std on each evaluation (seed
noise, as training agents has). No agent is trained, so a test can check in seconds that a strategy, under
metadisco's fitness sign and state handling, moves the ES mean towards the optimum: what meta-training does to a
real objective, without the seed noise that makes it slow to show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from metadisco.meta.problem import PopulationFitness


@dataclass(frozen=True)
class SyntheticTask:
    name: str = "quadratic"


class QuadraticProblem:
    """fitness(x) = -mean((ravel(x) - ravel(optimum))^2) (+ noise_std * N(0, 1)), higher is better; at most 0."""

    def __init__(self, optimum: Any, population_size: int, noise_std: float = 0.0, seed: int = 0, devices: int = 1):
        self.optimum = jnp.asarray(ravel_pytree(optimum)[0], jnp.float32)
        self.population_size = population_size
        self.devices = devices
        self.noise_std = noise_std
        self.seed = seed
        self._task = SyntheticTask()
        ravel = jax.vmap(lambda point: ravel_pytree(point)[0])
        self._fitness = jax.jit(lambda population: -jnp.mean((ravel(population) - self.optimum) ** 2, axis=-1))

    def fitness_of(self, point: Any) -> float:
        """The noiseless fitness of one ES point."""
        return float(-jnp.mean((ravel_pytree(point)[0] - self.optimum) ** 2))

    def tasks_of(self, generation: int) -> list[SyntheticTask]:
        return [self._task]

    def task_keys(self, generation: int) -> list[np.ndarray]:
        key = jax.random.fold_in(jax.random.PRNGKey(self.seed), generation)
        return [np.asarray(jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key)]

    def evaluate(self, population, generation: int, baselines=None) -> PopulationFitness:
        fitness = np.asarray(self._fitness(population), np.float64)
        if self.noise_std:
            rng = np.random.default_rng([self.seed, generation])
            fitness = fitness + self.noise_std * rng.standard_normal(fitness.shape)
        return PopulationFitness([fitness[:, None]], fitness, {}, [fitness], fitness)
