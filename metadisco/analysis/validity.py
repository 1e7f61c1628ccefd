"""Numerical checks that a drift is valid (mirror learning: Kuba et al., ICML 2022): finite and >= 0 for
r > 0, 0 at r = 1 and with zero slope there, for every A in [-8, 8]."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from metadisco.analysis.surfaces import a_values, r_values


def drift_violation(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], h: float = 1e-6,
                    slope_tol: float = 1e-3, value_tol: float = 1e-9) -> str | None:
    """None if the float64 drift `fn(r, A)` passes every check; otherwise a short reason.

    Zero slope at r = 1 is checked one-sidedly: |drift(1 +- h, A)| / h <= slope_tol (a drift that is >= 0 and
    0 at r = 1 has zero slope there exactly when both one-sided difference quotients vanish).
    """
    a = a_values(161)
    with np.errstate(all="ignore"):
        for grid in ("linear", "log"):
            r, aa = np.meshgrid(r_values(grid, 101), a_values(81))
            values = np.broadcast_to(fn(r, aa), r.shape)
            if not np.all(np.isfinite(values)):
                return f"not finite on the {grid} grid"
            if np.min(values) < -value_tol:
                return f"negative on the {grid} grid (min {np.min(values):.3g})"
        at_one = np.broadcast_to(fn(np.ones_like(a), a), a.shape)
        if not np.all(np.isfinite(at_one)) or np.max(np.abs(at_one)) > value_tol:
            return f"not 0 at r = 1 (max |drift(1, A)| = {np.max(np.abs(at_one)):.3g})"
        for side in (1.0 + h, 1.0 - h):
            near = np.broadcast_to(fn(np.full_like(a, side), a), a.shape)
            slope = np.max(np.abs(near - at_one)) / h
            if not np.isfinite(slope) or slope > slope_tol:
                return f"slope at r = 1 is not 0 (|drift(1 {'+' if side > 1 else '-'} h) / h| = {slope:.3g})"
    return None
