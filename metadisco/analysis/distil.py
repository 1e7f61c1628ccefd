"""Distil a drift into a closed form and close the loop: the distilled drift becomes an objective file (an
`expression` drift with the original's value loss and optimiser) that `train` and `evaluate` run.

    DIR/distilled.json     {"method", "expression", "latex", "params", "r2", "family", "grid", "fits", ...}
    DIR/distilled.msgpack  the objective file
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metadisco.analysis.collect import Histogram
from metadisco.analysis.parametric import distil_parametric
from metadisco.analysis.surfaces import DEFAULT_HORIZON, surface
from metadisco.analysis.sym import forms, round_floats, to_sympy
from metadisco.core.errors import UserError
from metadisco.core.io import write_json
from metadisco.objectives import Objective

METHODS = ("parametric", "symbolic")


@dataclass
class Target:
    """The drift to distil, sampled at points: r, a, y (drift) and weights w, flat float64 arrays."""

    r: np.ndarray
    a: np.ndarray
    y: np.ndarray
    w: np.ndarray | None
    description: dict


def grid_target(objective: Objective, meta: Any, grid: str = "log", n: int = 41, fraction: float = 0.0,
                num_updates: float = DEFAULT_HORIZON) -> Target:
    """The drift on an n x n grid of (r, A), unweighted."""
    s = surface(objective, meta, grid, n, n, fraction, num_updates)
    return Target(s.r.ravel(), s.a.ravel(), s.drift.ravel(), None,
                  {"grid": grid, "points": int(s.r.size), "weighted": False, "progress": fraction})


def histogram_target(objective: Objective, meta: Any, histogram: Histogram, env_id: str,
                     fraction: float = 0.0, num_updates: float = DEFAULT_HORIZON) -> Target:
    """The drift at the histogram's cell centres, weighted by how many training samples fell in each cell."""
    from metadisco.analysis.surfaces import drift_values

    r, a, w = histogram.mesh()
    if w.sum() <= 0:
        raise UserError(f"no (r, A) samples fell inside r in [{histogram.r_edges[0]}, {histogram.r_edges[-1]}], "
                        f"A in [{histogram.a_edges[0]}, {histogram.a_edges[-1]}] while training on {env_id}")
    y, _ = drift_values(objective, meta, r, a, fraction, num_updates)
    return Target(r.ravel(), a.ravel(), y.ravel(), w.ravel(),
                  {"grid": "histogram", "points": int(r.size), "weighted": True, "env": env_id,
                   "samples": histogram.total, "coverage": histogram.coverage, "progress": fraction})


def distil(target: Target, method: str, symbolic_options: dict | None = None) -> dict:
    """Fit a closed form to `target`; the JSON-ready result (see the module docstring)."""
    start = time.perf_counter()
    if method == "parametric":
        best, fits = distil_parametric(target.r, target.a, target.y, target.w)
        expr = round_floats(to_sympy(best.expression, best.params), 5)  # shown rounded; shipped exact
        result = {"method": method, "family": best.family, "expression": best.expression,
                  "constants": best.params, "params": best.params, "r2": best.r2, "rmse": best.rmse,
                  "readable": forms(expr)["expression"], "latex": forms(expr)["latex"],
                  "fits": [f.to_json() for f in fits]}
    elif method == "symbolic":
        from metadisco.analysis.symbolic import SymbolicSearch, distil_symbolic

        fit = distil_symbolic(target.r, target.a, target.y, target.w, SymbolicSearch.from_options(symbolic_options))
        result = {"method": method, **fit.to_json(), "constants": {}, "readable": fit.expression,
                  "options": symbolic_options or {}}
    else:
        raise UserError(f"unknown distillation method {method!r}; known: {', '.join(METHODS)}")
    result["target"] = target.description
    result["seconds"] = time.perf_counter() - start
    return result


def distilled_objective(original: Objective, original_meta: Any, result: dict) -> tuple[Objective, dict]:
    """The original objective with its drift replaced by the distilled expression drift."""
    from metadisco.objectives.expression import expression_drift

    drift = expression_drift(result["expression"], result["constants"])
    objective = Objective(drift=drift, value_loss=original.value_loss, optimizer=original.optimizer)
    meta = {"drift": drift.zero_meta(), "value_loss": original_meta["value_loss"],
            "optimizer": original_meta["optimizer"]}
    return objective, meta


def write_distilled(out: Path, original: Objective, original_meta: Any, result: dict, source: str) -> dict:
    """Write DIR/distilled.msgpack and DIR/distilled.json; return the JSON written."""
    from metadisco.objectives.files import save_objective

    objective, meta = distilled_objective(original, original_meta, result)
    save_objective(Path(out) / "distilled.msgpack", objective, meta)
    result = {**result, "source": source, "objective_spec": objective.to_spec()}
    write_json(Path(out) / "distilled.json", result)
    return result


def retained_performance(env_id: str, original: tuple[Objective, Any], distilled: tuple[Objective, Any],
                         seeds: int, timesteps: int | None = None, overrides=(), seed: int = 0) -> dict:
    """Train original and distilled with the same seed keys; final returns and distilled / original."""
    from metadisco.runs.seeds import resolve_config, train_seeds

    config = resolve_config(env_id, None, overrides, timesteps)
    out = {"env": env_id, "seeds": seeds, "seed": seed, "timesteps": config.num_updates * config.batch_size}
    for name, (objective, meta) in (("original", original), ("distilled", distilled)):
        result = train_seeds(env_id, objective, meta, config, seeds, seed)
        finite = result.final_return[np.isfinite(result.final_return)]
        out[name] = {"final_return": result.final_return, "mean": float(finite.mean()) if finite.size else None}
    a, b = out["original"]["mean"], out["distilled"]["mean"]
    out["retained"] = b / a if a not in (None, 0.0) and b is not None else None
    return out
