"""The closed-form drift families that distillation fits, in float64 numpy (for least squares), with their
expression-drift form (variables r and A, named constants).

PPO: ReLU((r - clip(r, 1 - eps, 1 + eps)) A).
DPO (Lu et al. 2022): soft hinge of (r - 1) A for A >= 0 (scale alpha), of log(r) A for A < 0 (scale beta).
Both are the package's own definitions (`metadisco.objectives.drift`, here with numpy); their expressions are
written in sympy's syntax (a test checks that both are the same functions, and valid).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metadisco.objectives.drift import dpo_drift, ppo_drift


def ppo(r: np.ndarray, a: np.ndarray, eps: float) -> np.ndarray:
    return ppo_drift(r, a, eps, xp=np)


def dpo(r: np.ndarray, a: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return dpo_drift(r, a, alpha, beta, xp=np)


@dataclass(frozen=True)
class Family:
    """A parametric drift family: its parameter names, bounds, a coarse start grid and its expression."""

    name: str
    params: tuple[str, ...]
    bounds: tuple[tuple[float, float], ...]
    starts: tuple[tuple[float, ...], ...]  # initial points for the local fit; the best result is kept
    expression: str  # sympy syntax over r, A and the parameter names

    def __call__(self, r, a, *theta):
        return FUNCTIONS[self.name](r, a, *theta)


FUNCTIONS = {"ppo": ppo, "dpo": dpo}

_EPS_STARTS = tuple((e,) for e in np.round(np.linspace(0.02, 0.98, 49), 4))
_SCALE_STARTS = (0.1, 0.3, 0.6, 1.0, 2.0, 4.0, 8.0)

FAMILIES = {
    "ppo": Family("ppo", ("eps",), ((1e-4, 0.9999),), _EPS_STARTS,
                  "Max(0, (r - Min(Max(r, 1 - eps), 1 + eps))*A)"),
    "dpo": Family("dpo", ("alpha", "beta"), ((1e-3, 1e3), (1e-3, 1e3)),
                  tuple((a, b) for a in _SCALE_STARTS for b in _SCALE_STARTS),
                  "Max(0, (r - 1)*Max(A, 0) - alpha*tanh((r - 1)*Max(A, 0)/alpha))"
                  " + Max(0, log(r)*Min(A, 0) - beta*tanh(log(r)*Min(A, 0)/beta))"),
}
