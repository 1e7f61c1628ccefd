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


TD_GRID = "Q(s, a) in [0, 20], TD error in [-8, 8], a reward-free step (Y = Q - delta, Q' = Y)"


def distil_td_loss(objective: Objective, meta: Any, at_progress: float = 0.0, points: int = 41) -> dict:
    """Fit a TD loss (`value_loss: {kind: learned_td}`) to a delta^2 + b Q + c delta + d over `TD_GRID`
    (`metadisco.objectives.learned_td_loss.td_loss_closed_form`): DQN's loss is a = 0.5, DQNReg's a = 1, b = 0.1.
    The distilled objective is DQNReg with weight b / a (under Adam the loss's scale a barely changes an update);
    c, a constant push on Q(s, a) that DQNReg has not, is reported, not kept."""
    from metadisco.analysis.surfaces import progress
    from metadisco.objectives.learned_td_loss import td_loss_closed_form

    start = time.perf_counter()
    fit = td_loss_closed_form(objective.value_loss, meta["value_loss"], progress(at_progress), points=points)
    readable = f"{fit['a']:.4g} delta^2 + {fit['b']:.4g} Q + {fit['c']:.4g} delta + {fit['d']:.4g}"
    weight = fit["b"] / fit["a"] if fit["a"] > 0 else None
    return {"method": "td_closed_form", "fit": fit, "readable": readable, "r2": fit["r2"], "dqn_reg_weight": weight,
            "target": f"{TD_GRID}, {points} x {points} points, n / N = {at_progress}",
            "seconds": time.perf_counter() - start}


def write_distilled_td(out: Path, original: Objective, original_meta: Any, result: dict, source: str) -> dict:
    """Write DIR/distilled.msgpack (DQNReg at the fitted weight, the original's optimiser and algorithm) and
    DIR/distilled.json; a fit with a <= 0 is no loss of DQNReg's family and is a `UserError`."""
    from metadisco.core.errors import UserError
    from metadisco.objectives import VALUE_LOSSES
    from metadisco.objectives.files import save_objective

    if result["dqn_reg_weight"] is None:
        raise UserError(f"the fitted form {result['readable']} has no positive delta^2 term, so it is no loss of "
                        "DQNReg's family; nothing distilled")
    objective = Objective(value_loss=VALUE_LOSSES.make("dqn_reg", weight=float(result["dqn_reg_weight"])),
                          optimizer=original.optimizer, algorithm=original.algorithm)
    meta = {**objective.zero_meta(), "optimizer": original_meta["optimizer"]}
    save_objective(Path(out) / "distilled.msgpack", objective, meta)
    result = {**result, "source": source, "objective_spec": objective.to_spec()}
    write_json(Path(out) / "distilled.json", result)
    return result


def retained_performance(env_id: str, original: tuple[Objective, Any], distilled: tuple[Objective, Any],
                         seeds: int, timesteps: int | None = None, overrides=(), seed: int = 0) -> dict:
    """Train original and distilled with the same seed keys; final returns and distilled / original."""
    from metadisco.runs.seeds import resolve_config, train_seeds

    config = resolve_config(env_id, None, overrides, timesteps, original[0].algorithm)
    out = {"env": env_id, "seeds": seeds, "seed": seed, "timesteps": config.num_updates * config.batch_size}
    for name, (objective, meta) in (("original", original), ("distilled", distilled)):
        result = train_seeds(env_id, objective, meta, config, seeds, seed)
        finite = result.final_return[np.isfinite(result.final_return)]
        out[name] = {"final_return": result.final_return, "mean": float(finite.mean()) if finite.size else None}
    a, b = out["original"]["mean"], out["distilled"]["mean"]
    out["retained"] = b / a if a not in (None, 0.0) and b is not None else None
    return out
