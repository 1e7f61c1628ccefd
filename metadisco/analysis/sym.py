"""sympy helpers: drift expressions over r and A as sympy objects, float64 numpy functions, readable and
LaTeX forms.

Strings are parsed by the package's one expression parser (`metadisco.objectives.expression.parse_expression`,
the safe one: a fixed grammar, bounded size), over its symbols r (positive) and A (real), so a distilled form
means here exactly what it means when it trains."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import sympy

from metadisco.objectives.expression import A, R, parse_expression

__all__ = ["A", "R", "forms", "round_floats", "to_numpy", "to_sympy"]

# Elementwise Max / Min of any number of arguments (numpy.amax over a tuple fails on mixed scalars / arrays).
_NUMPY = [{"Max": lambda *xs: functools.reduce(np.maximum, xs),
           "Min": lambda *xs: functools.reduce(np.minimum, xs)}, "numpy"]


def to_sympy(expression: str, constants: dict[str, float] | None = None) -> sympy.Expr:
    """Parse an expression string (the expression drift's grammar over r, A) and substitute named constants."""
    constants = dict(constants or {})
    expr = parse_expression(expression, tuple(constants))
    return expr.subs({sympy.Symbol(k, real=True): sympy.Float(v) for k, v in constants.items()})


def to_numpy(expr: sympy.Expr) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A float64 numpy function (r, A) -> drift of the same shape."""
    fn = sympy.lambdify((R, A), expr, modules=_NUMPY)

    def call(r, a):
        r, a = np.broadcast_arrays(np.asarray(r, np.float64), np.asarray(a, np.float64))
        with np.errstate(all="ignore"):
            return np.broadcast_to(np.asarray(fn(r, a), np.float64), r.shape)

    return call


def round_floats(expr: sympy.Expr, digits: int = 4) -> sympy.Expr:
    """Round every float constant to `digits` significant digits (what is shown is what is shipped)."""
    return expr.xreplace({f: sympy.Float(float(f"{float(f):.{digits}g}")) for f in expr.atoms(sympy.Float)})


def forms(expr: sympy.Expr) -> dict[str, str]:
    """{"expression": sympy syntax, parseable back; "latex": LaTeX}."""
    return {"expression": sympy.sstr(expr), "latex": sympy.latex(expr)}
