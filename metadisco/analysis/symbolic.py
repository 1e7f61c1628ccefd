"""Symbolic distillation: genetic-programming symbolic regression (gplearn) of a drift over (r, A) with the
operator set of Goldie et al. (2025) {+, -, *, /, max, min, square, neg, tanh, abs}.

Validity is part of the construction, then checked: a program g(x, A) over x = r - 1 and A is evolved as the
drift Max(0, g) (so non-negative), its fitness is the weighted squared error of Max(0, g) against the target on
the grid plus anchor points at r = 1 and r = 1 +- 0.01 whose target is 0 (which pushes g to be <= 0 around
r = 1, so the drift is 0 with zero slope there, like LPO's -1e-4 offset). Afterwards the best programs of
the final generation are converted to sympy with constants rounded, evaluated in float64 with true division
(gplearn protects division near 0; the shipped expression does not), and only valid drifts are kept
(`analysis.validity`, and the `expression` drift's own check). The result is the valid expression with the highest R².
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy

from metadisco.analysis.parametric import r_squared
from metadisco.analysis.sym import A, R, forms, round_floats, to_numpy
from metadisco.analysis.validity import drift_violation
from metadisco.core.errors import SettingError, UserError

OPERATORS = ("add", "sub", "mul", "div", "max", "min", "square", "neg", "tanh", "abs")
ANCHOR_RATIOS = (0.99, 1.0, 1.01)


def _square(x):
    # Clipped so that nested squares stay finite; the shipped sympy form is checked on its own.
    return np.square(np.clip(x, -1e6, 1e6))


def _relu_mse(y, y_pred, w):
    return np.average((np.maximum(y_pred, 0.0) - y) ** 2, weights=w)


def _gplearn():
    try:
        from gplearn.fitness import make_fitness
        from gplearn.functions import make_function
        from gplearn.genetic import SymbolicRegressor
    except ImportError:
        raise UserError("symbolic distillation needs gplearn: pip install gplearn") from None
    square = make_function(function=_square, name="square", arity=1, wrap=False)
    tanh = make_function(function=np.tanh, name="tanh", arity=1, wrap=False)
    relu_mse = make_fitness(function=_relu_mse, greater_is_better=False, wrap=False)
    function_set = tuple(square if op == "square" else tanh if op == "tanh" else op for op in OPERATORS)
    return SymbolicRegressor, function_set, relu_mse


@dataclass(frozen=True)
class SymbolicFit:
    expression: str  # sympy syntax over r and A
    latex: str
    r2: float
    length: int  # nodes in the gplearn program
    candidates: list[dict] = field(default_factory=list)  # the best few valid expressions, best first
    rejected: int = 0  # programs screened that were not valid drifts

    def to_json(self) -> dict:
        return {"family": "symbolic", "expression": self.expression, "latex": self.latex, "r2": self.r2,
                "params": {}, "length": self.length, "candidates": self.candidates, "rejected": self.rejected}


_SYMPY_OPS = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y,
    "max": sympy.Max, "min": sympy.Min, "square": lambda x: x ** 2, "neg": lambda x: -x, "tanh": sympy.tanh,
    "abs": sympy.Abs,
}


FEATURES = {"x": (R - 1, lambda r: r - 1.0), "A": (A, None), "log_r": (sympy.log(R), np.log)}


def program_to_sympy(program: list, features: tuple[str, ...] = ("x", "A")) -> sympy.Expr:
    """gplearn's prefix program (functions, feature indices, floats) -> sympy over r and A (feature i is X<i>)."""
    variables = tuple(FEATURES[f][0] for f in features)

    def build(i: int) -> tuple[sympy.Expr, int]:
        node = program[i]
        if isinstance(node, (int, np.integer)):
            return variables[int(node)], i + 1
        if isinstance(node, (float, np.floating)):
            return sympy.Float(float(node)), i + 1
        args, j = [], i + 1
        for _ in range(node.arity):
            arg, j = build(j)
            args.append(arg)
        return _SYMPY_OPS[node.name](*args), j

    expr, end = build(0)
    assert end == len(program), "malformed gplearn program"
    return expr


def _columns(r, a, features):
    return np.stack([a if f == "A" else FEATURES[f][1](r) for f in features], 1)


def _accepted_by_expression_drift(expr: sympy.Expr) -> bool:
    """The objectives' own check (it also probes A = +-1e-3, where e.g. Max(0, A (r - 1) - c A^4) has a flat
    region too narrow to resolve numerically): what it refuses could not be shipped as an objective file."""
    from metadisco.objectives.expression import expression_drift

    try:
        expression_drift(sympy.sstr(expr))
    except UserError:
        return False
    return True


def _anchored_data(r, a, y, w, features):
    """Grid points plus anchors at r in ANCHOR_RATIOS for 33 values of A."""
    anchor_a = np.linspace(-8.0, 8.0, 33)
    ar = np.repeat(ANCHOR_RATIOS, anchor_a.size)
    aa = np.tile(anchor_a, len(ANCHOR_RATIOS))
    x = np.concatenate([_columns(r, a, features), _columns(ar, aa, features)])
    target = np.concatenate([y, np.zeros(ar.size)])
    # Anchors weigh as much as the whole grid together, so a program cannot trade validity for fit.
    weights = np.concatenate([w, np.full(ar.size, w.sum() / ar.size)])
    return x, target, weights


@dataclass(frozen=True)
class SymbolicSearch:
    """The settings of one symbolic regression (gplearn's genetic programming, then the validity screen)."""

    population: int = 1000  # programs per generation
    generations: int = 15
    random_state: int = 0  # gplearn's seed
    parsimony: float = 5e-4  # gplearn's penalty per program node
    screen: int = 20  # final-generation programs checked for validity before settling for the valid ones found
    digits: int = 4  # significant digits of the expression's constants
    # gplearn's variables X0, X1, ...: "x" = r - 1, "A", and optionally "log_r" = log r (not in Goldie et al.'s
    # (2025) set, but DPO's negative-advantage half is a function of log r)
    features: tuple[str, ...] = ("x", "A")

    @classmethod
    def from_options(cls, options: dict | None) -> SymbolicSearch:
        """From plain options (a distilled.json's `options`); a one-line error names an unknown one."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(options or {}) - known)
        if unknown:
            raise UserError(f"unknown symbolic regression option(s) {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(known))}")
        return cls(**{k: tuple(v) if k == "features" else v for k, v in (options or {}).items()})


def distil_symbolic(r: np.ndarray, a: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                    search: SymbolicSearch = SymbolicSearch()) -> SymbolicFit:
    """Symbolic regression of drift values y at points (r, a) (any common shape), weighted by `weights`; the best
    valid expression (`search`: the regression's settings)."""
    population, generations, random_state = search.population, search.generations, search.random_state
    parsimony, screen, digits, features = search.parsimony, search.screen, search.digits, search.features
    unknown = sorted(set(features) - set(FEATURES))
    if unknown or "A" not in features:
        raise UserError(f"symbolic features must include 'A' and be among {', '.join(FEATURES)}; got {features}")
    SymbolicRegressor, function_set, relu_mse = _gplearn()
    r, a, y = (np.asarray(v, np.float64).ravel() for v in (r, a, y))
    w = np.ones_like(y) if weights is None else np.asarray(weights, np.float64).ravel()
    x, target, fit_weights = _anchored_data(r, a, y, w, features)
    est = SymbolicRegressor(population_size=population, generations=generations, function_set=function_set,
                            metric=relu_mse, parsimony_coefficient=parsimony, const_range=(-1.0, 1.0),
                            init_depth=(2, 5), random_state=random_state, n_jobs=1)
    est.fit(x, target, sample_weight=fit_weights)

    # Screen the final generation with gplearn's own (protected) evaluation, then check the best in sympy.
    grid_x = x[: y.size]
    seen, screened = set(), []
    for program in est._programs[-1]:
        if program is None or str(program) in seen:
            continue
        seen.add(str(program))
        with np.errstate(all="ignore"):
            pred = np.maximum(program.execute(grid_x), 0.0)
        if np.all(np.isfinite(pred)):
            screened.append((r_squared(y, pred, w), program))
    screened.sort(key=lambda item: -item[0])

    # Check in order of screened R²: stop at 5 valid ones, or once `screen` are checked and one is valid.
    valid, rejected = [], 0
    for checked, (_, program) in enumerate(screened):
        if len(valid) >= 5 or (checked >= screen and valid):
            break
        try:  # sympy refuses e.g. Max(0, zoo) where a program divides by an exact 0
            expr = round_floats(sympy.Max(0, program_to_sympy(program.program, features)), digits)
        except (ValueError, TypeError, ZeroDivisionError):
            expr = None
        if (expr is None or expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo) or drift_violation(to_numpy(expr))
                is not None or not _accepted_by_expression_drift(expr)):
            rejected += 1
            continue
        valid.append((r_squared(y, to_numpy(expr)(r, a), w), program.length_, expr))
    if not valid:
        raise SettingError(f"symbolic regression found no valid drift among the {len(screened)} programs of its "
                           "final generation; try larger generations or population", ("generations", "population"))
    valid.sort(key=lambda item: (-item[0], item[1]))
    r2, length, expr = valid[0]
    candidates = [{**forms(e), "r2": q, "length": n} for q, n, e in valid[:5]]
    return SymbolicFit(**forms(expr), r2=r2, length=length, candidates=candidates, rejected=rejected)
