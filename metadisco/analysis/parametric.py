"""Parametric distillation: least-squares fits of the PPO family (eps) and the DPO family (alpha, beta) to a
drift's values on a grid of (r, A), optionally weighted by how often training visits each cell.

Each family is scored at a coarse grid of starting points; the best few are refined with
`scipy.optimize.least_squares` (bounded, float64), and the fit with the highest weighted R² is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from metadisco.analysis.families import FAMILIES, Family


@dataclass(frozen=True)
class Fit:
    family: str
    params: dict[str, float]
    r2: float
    rmse: float  # weighted root-mean-square error, in drift units
    expression: str  # the family's expression (sympy syntax), constants named by `params`

    def to_json(self) -> dict:
        return {"family": self.family, "params": self.params, "r2": self.r2, "rmse": self.rmse,
                "expression": self.expression}


def r_squared(y: np.ndarray, pred: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Weighted coefficient of determination, 1 - SS_res / SS_tot (1 for a perfect fit; 0 for the mean)."""
    w = np.ones_like(y) if weights is None else weights
    mean = np.sum(w * y) / np.sum(w)
    ss_tot = np.sum(w * (y - mean) ** 2)
    ss_res = np.sum(w * (y - pred) ** 2)
    if ss_tot == 0.0:
        return 1.0 if ss_res == 0.0 else -np.inf
    return float(1.0 - ss_res / ss_tot)


def fit_family(family: Family, r: np.ndarray, a: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
               refine: int = 3) -> Fit:
    """Least-squares fit of `family` to drift values y at points (r, a) (flat float64 arrays of one length)."""
    w = np.ones_like(y) if weights is None else np.asarray(weights, np.float64)
    sw = np.sqrt(w)
    lower, upper = (np.array(b) for b in zip(*family.bounds, strict=True))

    def residuals(theta):
        return sw * (family(r, a, *theta) - y)

    scored = sorted(family.starts, key=lambda t: float(np.sum(residuals(t) ** 2)))
    best = None
    for start in scored[:refine]:
        result = least_squares(residuals, np.clip(start, lower, upper), bounds=(lower, upper), x_scale="jac",
                               xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=2000)
        cost = float(np.sum(result.fun ** 2))
        if best is None or cost < best[0]:
            best = (cost, result.x)
    theta = best[1]
    pred = family(r, a, *theta)
    rmse = float(np.sqrt(np.sum(w * (pred - y) ** 2) / np.sum(w)))
    params = {name: float(v) for name, v in zip(family.params, theta, strict=True)}
    return Fit(family.name, params, r_squared(y, pred, w), rmse, family.expression)


def distil_parametric(r: np.ndarray, a: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                      families: tuple[str, ...] = ("dpo", "ppo")) -> tuple[Fit, list[Fit]]:
    """Fit every family; return (the fit with the highest R², all fits)."""
    r, a, y = (np.asarray(x, np.float64).ravel() for x in (r, a, y))
    w = None if weights is None else np.asarray(weights, np.float64).ravel()
    fits = [fit_family(FAMILIES[name], r, a, y, w) for name in families]
    return max(fits, key=lambda f: f.r2), fits
