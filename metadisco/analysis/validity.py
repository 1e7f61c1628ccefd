"""Numerical checks that a drift is valid (Kuba et al. 2022, mirror learning): finite and >= 0 for r > 0, 0 at
r = 1 and with zero slope there, for every A in [-8, 8].

The test at r = 1 is the package's one (`metadisco.objectives.expression`, which states its tolerances and
why): |drift(1, A)| <= 1e-9 x scale and Richardson-extrapolated one-sided slopes <= 1e-6 x scale, where
scale = 1 + max |drift| for r in [e^-1, e].
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from metadisco.analysis.surfaces import a_values, r_values
from metadisco.objectives.expression import VALUE_TOL, drift_scale, slope_violation


def drift_violation(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], value_tol: float = 1e-9) -> str | None:
    """None if the float64 drift `fn(r, A)` passes every check; otherwise a short reason. `value_tol` is how far
    below 0 a value may be on the grids (a fit's rounding)."""
    with np.errstate(all="ignore"):
        for grid in ("linear", "log"):
            r, aa = np.meshgrid(r_values(grid, 101), a_values(81))
            values = np.broadcast_to(fn(r, aa), r.shape)
            if not np.all(np.isfinite(values)):
                return f"not finite on the {grid} grid"
            if np.min(values) < -value_tol:
                return f"negative on the {grid} grid (min {np.min(values):.3g})"
        a = a_values(161)
        scale = drift_scale(fn, a)
        at_one = np.broadcast_to(fn(np.ones_like(a), a), a.shape)
        if not np.all(np.isfinite(at_one)) or np.max(np.abs(at_one)) > VALUE_TOL * scale:
            return f"not 0 at r = 1 (max |drift(1, A)| = {np.max(np.abs(at_one)):.3g})"
        violation = slope_violation(fn, a, scale)
        if violation is not None:
            side, i, slope = violation
            return f"slope at r = 1 is not 0 ({'right' if side > 0 else 'left'} slope {slope:.3g} at A = {a[i]:.3g})"
    return None
