"""Evaluate objective pieces on grids: the drift, the actor objective r A - drift and -dL/dr over (r, A).

The per-sample actor loss of mirror learning is L(r, A) = -(r A - drift(r, A)), so
-dL/dr = A - d drift / d r (Kuba et al., ICML 2022). Grids follow Goldie et al. (2025): A in [-8, 8], r on
[0.5, 1.5] ("linear") or r = exp(u), u in [-2, 2] ("log").
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.core.errors import UserError
from metadisco.objectives import Objective, Progress
from metadisco.objectives.registry import DriftInputs

A_RANGE = (-8.0, 8.0)
R_GRIDS = {"linear": "r in [0.5, 1.5]", "log": "r = exp(u), u in [-2, 2]"}
DEFAULT_HORIZON = 1000.0  # num_updates shown to progress-aware drifts (about CartPole's / MinAtar's N)


def r_values(grid: str, n: int) -> np.ndarray:
    """[n] ratios of the named grid, increasing."""
    if grid == "linear":
        return np.linspace(0.5, 1.5, n)
    if grid == "log":
        return np.exp(np.linspace(-2.0, 2.0, n))
    raise UserError(f"unknown grid {grid!r}; known: {', '.join(R_GRIDS)}")


def a_values(n: int) -> np.ndarray:
    return np.linspace(*A_RANGE, n)


class Surface(NamedTuple):
    """Values on a mesh: r, A, drift, objective (r A - drift), neg_grad (-dL/dr); each [n_a, n_r], float64."""

    r: np.ndarray
    a: np.ndarray
    drift: np.ndarray
    objective: np.ndarray
    neg_grad: np.ndarray


def progress(fraction: float = 0.0, num_updates: float = DEFAULT_HORIZON) -> Progress:
    return Progress(jnp.float32(fraction), jnp.float32(num_updates))


@partial(jax.jit, static_argnums=0)
def _drift_and_slope(objective: Objective, drift_meta, r, a, fraction, num_updates):
    # One compiled function per (objective, shape): meta, progress and the points are arguments.
    prog = Progress(fraction, num_updates)
    total = lambda r_: jnp.sum(objective.drift(drift_meta, DriftInputs(r_, a), prog))
    return objective.drift(drift_meta, DriftInputs(r, a), prog), jax.grad(total)(r)


def drift_values(objective: Objective, meta: Any, r: np.ndarray, a: np.ndarray, fraction: float = 0.0,
                 num_updates: float = DEFAULT_HORIZON) -> tuple[np.ndarray, np.ndarray]:
    """(drift, d drift / d r) at points (r, a) of any common shape, as float64 numpy arrays."""
    r, a = np.broadcast_arrays(np.asarray(r, np.float32), np.asarray(a, np.float32))
    d, g = _drift_and_slope(objective, meta["drift"], jnp.asarray(r.ravel()), jnp.asarray(a.ravel()),
                            jnp.float32(fraction), jnp.float32(num_updates))
    return np.asarray(d, np.float64).reshape(r.shape), np.asarray(g, np.float64).reshape(r.shape)


def surface(objective: Objective, meta: Any, grid: str = "linear", n_r: int = 101, n_a: int = 81,
            fraction: float = 0.0, num_updates: float = DEFAULT_HORIZON) -> Surface:
    """The drift, r A - drift and -dL/dr of `objective` on the named grid."""
    r, a = np.meshgrid(r_values(grid, n_r), a_values(n_a))
    d, dd = drift_values(objective, meta, r, a, fraction, num_updates)
    return Surface(r, a, d, r * a - d, a - dd)
