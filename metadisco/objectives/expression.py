"""Closed-form drifts from a small, safe expression over r and A (for distilled objectives and hand-written ones).

    DRIFTS.make("expression", expression="relu((r - clip(r, 1 - eps, 1 + eps)) * A)", constants=(("eps", 0.2),))
    expression_drift("where(A >= 0, relu((r-1)*A - alpha*tanh((r-1)*A/alpha)), "
                     "relu(log(r)*A - beta*tanh(log(r)*A/beta)))", {"alpha": 2.0, "beta": 0.6})   # DPO

Grammar (Python expression syntax, read with `ast.parse` and turned into sympy node by node: user text is
never evaluated, so only the names below can appear):

    variables   r (the ratio pi_new / pi_old, > 0) and A (the normalised advantage)
    constants   the names given in `constants` (identifiers other than the names here), and numbers: 2, 0.6, 1e-3
    operators   + - * / **, unary -, parentheses
    functions   tanh log exp sqrt abs sign square(x)  relu(x) = max(0, x)  max(a, b, ...)  min(a, b, ...)
                clip(x, lo, hi) = min(max(x, lo), hi)
    conditions  comparisons < <= > >= of expressions, joined with `and` `or` `not` (or & | ~), used in
                where(cond, a, b),  a if cond else b,  Piecewise((a, cond), (b, True))
    sympy's own spellings Max, Min, Abs, Piecewise also parse, so `str()` of a sympy expression reads back.

The drift must be a valid mirror-learning drift at r = 1: drift(1, A) = 0 and d drift / d r (1, A) = 0 for
every A. Both are checked when the drift is made, symbolically where sympy can decide it and numerically on a
grid of A in [-8, 8] (value, and one-sided slopes on both sides, so a kink at r = 1 is refused too); a drift
that fails is a `UserError` showing drift(1, A) or the slope. Non-negativity away from r = 1 is not enforced
(mirror learning wants it; a distilled fit may dip slightly below 0).

The expression is compiled to jax.numpy by walking the sympy tree (no code generation either).
"""

from __future__ import annotations

import ast
import difflib
import keyword
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

import jax.numpy as jnp
import numpy as np
import sympy

from metadisco.core.errors import UserError, shorten
from metadisco.objectives.registry import DRIFTS, DriftInputs, Piece, Progress

R = sympy.Symbol("r", positive=True)
A = sympy.Symbol("A", real=True)
VARIABLES = {"r": R, "A": A}
MAX_LENGTH = 4000  # characters: a distilled expression is far shorter; bounds parsing work
# Bounds checked on the syntax tree before any symbolic work: sympy's exact arithmetic and simplification
# take time that grows with the size and depth of the expression and, for integer powers, with the exponent
# ((r - 1)**2 * (r + 2)**1000000000 hangs in expansion). A distilled drift has tens of nodes and small powers;
# float32 overflows beyond |x|**64 for any |x| > 4 anyway.
MAX_NODES = 400
MAX_DEPTH = 100
MAX_EXPONENT = 64

_relu = lambda x: sympy.Max(0, x)
_clip = lambda x, lo, hi: sympy.Min(sympy.Max(x, lo), hi)
_where = lambda cond, a, b: sympy.Piecewise((a, cond), (b, True))
# name -> (sympy builder, allowed argument counts: an int, or None for "two or more")
FUNCTIONS: dict[str, tuple[Callable, int | None]] = {
    "tanh": (sympy.tanh, 1), "log": (sympy.log, 1), "exp": (sympy.exp, 1), "sqrt": (sympy.sqrt, 1),
    "abs": (sympy.Abs, 1), "Abs": (sympy.Abs, 1), "sign": (sympy.sign, 1), "square": (lambda x: x**2, 1),
    "relu": (_relu, 1), "max": (sympy.Max, None), "Max": (sympy.Max, None), "min": (sympy.Min, None),
    "Min": (sympy.Min, None), "clip": (_clip, 3), "where": (_where, 3),
}
RESERVED = set(VARIABLES) | set(FUNCTIONS) | {"Piecewise", "True", "False"}

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_COMPARE = {ast.Lt: sympy.StrictLessThan, ast.LtE: sympy.LessThan, ast.Gt: sympy.StrictGreaterThan,
            ast.GtE: sympy.GreaterThan}


def normalize_constants(constants: Any) -> tuple[tuple[str, float], ...]:
    """A mapping or pairs (lists from a file too) -> sorted ((name, float), ...); bad names or values: UserError."""
    pairs = list(constants.items()) if isinstance(constants, dict) else list(constants or ())
    out = {}
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise UserError(f"expression constants must be (name, value) pairs, got {shorten(pair)}")
        name, value = pair
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name in RESERVED:
            raise UserError(f"bad constant name {shorten(name)}: use an identifier other than r, A and the "
                            "function names")
        if name in out:
            raise UserError(f"constant {name!r} is given twice")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise UserError(f"constant {name!r} must be a number, got {shorten(value)}") from None
        if not math.isfinite(value):
            raise UserError(f"constant {name!r} must be finite, got {value}")
        out[name] = value
    return tuple(sorted(out.items()))


class _Builder:
    """Python AST -> sympy, accepting only the grammar above."""

    def __init__(self, constant_names):
        self.names = dict(VARIABLES)
        self.names.update({name: sympy.Symbol(name, real=True) for name in constant_names})

    def error(self, node, what: str) -> UserError:
        return UserError(f"expression: {what} (at column {getattr(node, 'col_offset', 0) + 1}); "
                         "see `metadisco.objectives.expression` for the grammar")

    def build(self, node):
        if isinstance(node, ast.Expression):
            return self.build(node.body)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return sympy.true if node.value else sympy.false
            if isinstance(node.value, (int, float)):
                return sympy.Integer(node.value) if isinstance(node.value, int) else sympy.Float(node.value)
            raise self.error(node, f"{node.value!r} is not a number")
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            if node.id in FUNCTIONS or node.id == "Piecewise":
                raise self.error(node, f"{node.id} is a function; call it")
            known = [*self.names, *FUNCTIONS]
            close = difflib.get_close_matches(node.id, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "; name it in the constants"
            raise self.error(node, f"unknown name {node.id!r}{hint}")
        if isinstance(node, ast.BinOp):
            left, right = self.build(node.left), self.build(node.right)
            if isinstance(node.op, ast.Pow):
                _check_exponent(right, node, self)
                return _checked_power(left ** right, node, self)
            if type(node.op) in _BINARY:
                return _BINARY[type(node.op)](left, right)
            if isinstance(node.op, ast.BitAnd):
                return sympy.And(left, right)
            if isinstance(node.op, ast.BitOr):
                return sympy.Or(left, right)
            raise self.error(node, f"operator {type(node.op).__name__} is not allowed")
        if isinstance(node, ast.UnaryOp):
            operand = self.build(node.operand)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            return sympy.Not(operand)  # ast.Not, ast.Invert
        if isinstance(node, ast.Compare):
            terms = [self.build(node.left)] + [self.build(c) for c in node.comparators]
            parts = []
            for op, left, right in zip(node.ops, terms[:-1], terms[1:], strict=True):
                if type(op) not in _COMPARE:
                    raise self.error(node, f"comparison {type(op).__name__} is not allowed (use < <= > >=)")
                parts.append(_COMPARE[type(op)](left, right))
            return sympy.And(*parts)
        if isinstance(node, ast.BoolOp):
            values = [self.build(v) for v in node.values]
            return sympy.And(*values) if isinstance(node.op, ast.And) else sympy.Or(*values)
        if isinstance(node, ast.IfExp):
            return sympy.Piecewise((self.build(node.body), self.build(node.test)), (self.build(node.orelse), True))
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.error(node, f"{type(node).__name__} is not allowed")

    def call(self, node: ast.Call):
        if not isinstance(node.func, ast.Name) or node.keywords:
            raise self.error(node, "only calls of the listed functions, with positional arguments, are allowed")
        name = node.func.id
        if name == "Piecewise":
            pieces = []
            for arg in node.args:
                if not isinstance(arg, ast.Tuple) or len(arg.elts) != 2:
                    raise self.error(arg, "Piecewise takes (value, condition) pairs")
                pieces.append((self.build(arg.elts[0]), self.build(arg.elts[1])))
            if not pieces:
                raise self.error(node, "Piecewise needs at least one (value, condition) pair")
            return sympy.Piecewise(*pieces)
        if name not in FUNCTIONS:
            close = difflib.get_close_matches(name, list(FUNCTIONS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; functions: {', '.join(sorted(FUNCTIONS))}"
            raise self.error(node, f"unknown function {name!r}{hint}")
        fn, arity = FUNCTIONS[name]
        args = [self.build(a) for a in node.args]
        if (arity is None and len(args) < 2) or (arity is not None and len(args) != arity):
            raise self.error(node, f"{name} takes {'two or more' if arity is None else arity} argument(s), "
                                   f"got {len(args)}")
        return fn(*args)


def _check_exponent(exponent, node, builder) -> None:
    """Refuse a numeric exponent beyond +-MAX_EXPONENT before sympy computes the power."""
    if exponent.is_Number and abs(exponent) > MAX_EXPONENT:
        raise builder.error(node, f"exponent {sympy.sstr(exponent)[:40]} is beyond +-{MAX_EXPONENT}")


def _checked_power(power, node, builder):
    # sympy merges powers of powers, (r**8)**16 = r**128: check the exponent it ends with too.
    if isinstance(power, sympy.Pow):
        _check_exponent(power.exp, node, builder)
    return power


def _check_size(tree: ast.AST) -> None:
    """Refuse syntax trees with more than MAX_NODES nodes or deeper than MAX_DEPTH (walked without recursion)."""
    count, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise UserError(f"expression: more than {MAX_NODES} syntax nodes; a drift is far smaller")
        if depth > MAX_DEPTH:
            raise UserError(f"expression: nested deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def parse_expression(text: str, constant_names=()) -> sympy.Basic:
    """The sympy expression of `text` over r, A and the named constants (as symbols); bad text is a UserError."""
    if not isinstance(text, str) or not text.strip():
        raise UserError("expression: give a non-empty expression over r and A")
    if len(text) > MAX_LENGTH:
        raise UserError(f"expression: longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise UserError(f"expression: syntax error at column {e.offset or 1}: {shorten(text.strip())}") from None
    except (RecursionError, MemoryError, ValueError):
        raise UserError("expression: too deeply nested or malformed") from None
    _check_size(tree)
    try:
        expr = _Builder(constant_names).build(tree)
    except RecursionError:
        raise UserError("expression: too deeply nested") from None
    except UserError:
        raise
    except (TypeError, ValueError) as e:  # sympy refusing e.g. a comparison used as a number
        raise UserError(f"expression: {shorten(str(e), 200)}") from None
    if isinstance(expr, sympy.logic.boolalg.Boolean) and not isinstance(expr, sympy.Piecewise):
        raise UserError("expression: the whole expression is a condition, not a number")
    return expr


# ---------------------------------------------------------------------------------------------------------
# sympy -> array function (jax.numpy or numpy), by walking the tree


def _compile(expr) -> Callable[[dict, Any], Any]:
    """fn(env, xp): evaluate `expr` with `env` = {Symbol: array} and `xp` = jax.numpy or numpy."""
    if expr in (sympy.true, sympy.false):
        value = bool(expr)
        return lambda env, xp: value
    if isinstance(expr, sympy.Symbol):
        return lambda env, xp: env[expr]
    if expr.is_Number or isinstance(expr, sympy.NumberSymbol):
        try:
            value = float(expr)
        except OverflowError:  # an exact integer beyond float range
            value = math.inf
        if not math.isfinite(value):
            raise UserError(f"expression: contains the non-finite number {shorten(str(expr)).strip(chr(39))}")
        return lambda env, xp: value
    if isinstance(expr, sympy.Piecewise):
        pairs = [(_compile(value), _compile(cond)) for value, cond in expr.args]

        def piecewise(env, xp):
            out = xp.nan  # sympy's value where no condition holds
            for value, cond in reversed(pairs):
                out = xp.where(cond(env, xp), value(env, xp), out)
            return out

        return piecewise
    args = [_compile(a) for a in expr.args]
    if isinstance(expr, sympy.Add):
        return lambda env, xp: reduce(operator.add, (f(env, xp) for f in args))
    if isinstance(expr, sympy.Mul):
        return lambda env, xp: reduce(operator.mul, (f(env, xp) for f in args))
    if isinstance(expr, sympy.Pow):
        base, exponent = args
        e = expr.args[1]
        if e.is_Integer:
            n = int(e)
            return lambda env, xp: base(env, xp) ** n
        if e == sympy.Rational(1, 2):
            return lambda env, xp: xp.sqrt(base(env, xp))
        return lambda env, xp: xp.power(base(env, xp), exponent(env, xp))
    unary = {sympy.tanh: "tanh", sympy.log: "log", sympy.exp: "exp", sympy.Abs: "abs", sympy.sign: "sign"}
    for cls, name in unary.items():
        if isinstance(expr, cls):
            (f,) = args
            return lambda env, xp, name=name: getattr(xp, name)(f(env, xp))
    if isinstance(expr, (sympy.Max, sympy.Min)):
        name = "maximum" if isinstance(expr, sympy.Max) else "minimum"
        return lambda env, xp: reduce(getattr(xp, name), (f(env, xp) for f in args))
    relations = {sympy.StrictLessThan: operator.lt, sympy.LessThan: operator.le,
                 sympy.StrictGreaterThan: operator.gt, sympy.GreaterThan: operator.ge}
    for cls, op in relations.items():
        if isinstance(expr, cls):
            left, right = args
            return lambda env, xp, op=op: op(left(env, xp), right(env, xp))
    if isinstance(expr, sympy.And):
        return lambda env, xp: reduce(xp.logical_and, (f(env, xp) for f in args))
    if isinstance(expr, sympy.Or):
        return lambda env, xp: reduce(xp.logical_or, (f(env, xp) for f in args))
    if isinstance(expr, sympy.Not):
        (f,) = args
        return lambda env, xp: xp.logical_not(f(env, xp))
    raise UserError(f"expression: cannot compile {type(expr).__name__} ({shorten(str(expr))})")


def to_source(expr, names: dict) -> str:
    """`expr` as one jax.numpy expression in Python source, `names` = {Symbol: source name}: the same operations
    in the same order as `_compile` (so the same float32 results), for `metadisco export`. Written beside
    `_compile` so that a change to one is seen in the other (`tests/objectives/test_export.py` checks they agree)."""
    if expr in (sympy.true, sympy.false):
        return repr(bool(expr))
    if isinstance(expr, sympy.Symbol):
        return names[expr]
    if expr.is_Number or isinstance(expr, sympy.NumberSymbol):
        value = float(expr)  # finite: `_compile` refused the expression otherwise
        return f"({value!r})" if value < 0 else repr(value)  # (-2.0) ** 2, not -(2.0 ** 2)
    if isinstance(expr, sympy.Piecewise):
        out = "jnp.nan"
        for value, cond in reversed(expr.args):
            out = f"jnp.where({to_source(cond, names)}, {to_source(value, names)}, {out})"
        return out
    args = [to_source(a, names) for a in expr.args]
    fold = lambda op: reduce(lambda a, b: f"({a} {op} {b})", args)
    call = lambda fn: reduce(lambda a, b: f"jnp.{fn}({a}, {b})", args)
    if isinstance(expr, sympy.Add):
        return fold("+")
    if isinstance(expr, sympy.Mul):
        return fold("*")
    if isinstance(expr, sympy.Pow):
        base, exponent = args
        e = expr.args[1]
        if e.is_Integer:
            return f"({base} ** {int(e)})"
        if e == sympy.Rational(1, 2):
            return f"jnp.sqrt({base})"
        return f"jnp.power({base}, {exponent})"
    unary = {sympy.tanh: "tanh", sympy.log: "log", sympy.exp: "exp", sympy.Abs: "abs", sympy.sign: "sign"}
    for cls, name in unary.items():
        if isinstance(expr, cls):
            return f"jnp.{name}({args[0]})"
    if isinstance(expr, (sympy.Max, sympy.Min)):
        return call("maximum" if isinstance(expr, sympy.Max) else "minimum")
    relations = {sympy.StrictLessThan: "<", sympy.LessThan: "<=", sympy.StrictGreaterThan: ">",
                 sympy.GreaterThan: ">="}
    for cls, op in relations.items():
        if isinstance(expr, cls):
            return f"({args[0]} {op} {args[1]})"
    if isinstance(expr, sympy.And):
        return call("logical_and")
    if isinstance(expr, sympy.Or):
        return call("logical_or")
    if isinstance(expr, sympy.Not):
        return f"jnp.logical_not({args[0]})"
    raise UserError(f"expression: cannot write {type(expr).__name__} as source ({shorten(str(expr))})")


# ---------------------------------------------------------------------------------------------------------
# validity at r = 1

_A_GRID = np.concatenate([np.linspace(-8.0, 8.0, 161), [-1e-3, 1e-3, -0.37, 0.37, 2.71, -2.71]])
_SMOOTH_BREAKERS = (sympy.Piecewise, sympy.Max, sympy.Min, sympy.Abs, sympy.sign, sympy.Heaviside)


def _symbolic(expr) -> sympy.Basic | None:
    """sympy's simplified form, or None when sympy fails on it."""
    try:
        return sympy.simplify(expr)
    except Exception:  # sympy raises many types on exotic input; the numeric check still decides
        return None


def _numeric(fn, r, a):
    with np.errstate(all="ignore"):
        out = fn({R: np.asarray(r, np.float64), A: np.asarray(a, np.float64)}, np)
    return np.broadcast_to(np.asarray(out, np.float64), np.broadcast_shapes(np.shape(r), np.shape(a)))


# The one validity test of a drift at r = 1 in the package (also `analysis.validity.drift_violation`): over A
# in `_A_GRID`, |drift(1, A)| <= VALUE_TOL * scale and the one-sided slopes, Richardson-extrapolated from
# quotients at h = 1e-4 and h / 2, are <= SLOPE_TOL * scale unless the quotient shrinks as h halves;
# scale = 1 + max |drift| for r in [e^-1, e]. Relative to the drift's own size, so it does not depend on its
# units; 1e-6 because float64 quotients at h = 1e-4 of a smooth drift are exact to about 1e-8, while a drift
# with a real slope keeps it as h shrinks (an absolute 1e-3, the other tolerance this replaced, passed
# 1e-4 (r - 1) A, which is not flat at r = 1).
VALUE_TOL = 1e-9
SLOPE_TOL = 1e-6
_H = 1e-4


def drift_scale(drift, a=_A_GRID) -> float:
    """1 + max |drift(r, A)| for r in [e^-1, e]: what VALUE_TOL and SLOPE_TOL are relative to."""
    with np.errstate(all="ignore"):
        values = np.asarray(drift(np.exp(np.linspace(-1, 1, 21))[:, None], a[None, :]), np.float64)
    return 1.0 + float(np.nanmax(np.abs(values), initial=0.0))


def slope_violation(drift, a=_A_GRID, scale: float | None = None) -> tuple[float, int, float] | None:
    """(side, index into a, slope) of the first A where float64 `drift(r, A)` is not flat at r = 1, or None."""
    scale = drift_scale(drift, a) if scale is None else scale
    with np.errstate(all="ignore"):
        at_one = np.broadcast_to(np.asarray(drift(1.0, a), np.float64), a.shape)
        for side in (1.0, -1.0):
            q_h = (np.asarray(drift(1.0 + side * _H, a), np.float64) - at_one) / (side * _H)
            q_half = (np.asarray(drift(1.0 + side * _H / 2, a), np.float64) - at_one) / (side * _H / 2)
            slope = 2.0 * q_half - q_h
            # A flat drift's quotient shrinks as h halves (by 2 for a quadratic start, 4 for a cubic one, where
            # Richardson's O(h^2) model overshoots to -q/2); a real slope keeps it. Refuse only a quotient that
            # does not shrink: sharp but flat forms (DPO with a small alpha) pass, kinks and linear terms do not.
            shrinks = np.abs(q_half) <= 0.75 * np.abs(q_h)
            bad = ~np.isfinite(slope) | ((np.abs(slope) > SLOPE_TOL * scale) & ~shrinks)
            if bad.any():
                i = int(np.argmax(bad))
                return side, i, float(slope[i])
    return None


def check_valid_at_one(expr, fn, text: str) -> None:
    """Refuse (UserError) a drift that is not 0 at r = 1 or has a non-zero slope there, for some A."""
    a = _A_GRID
    drift = lambda r, a_: _numeric(fn, r, a_)
    scale = drift_scale(drift, a)
    at_one = _numeric(fn, 1.0, a)
    value = _symbolic(expr.subs(R, 1))
    proven_zero = value is not None and value == 0
    if not proven_zero:
        smooth_nonzero = value is not None and value.is_Number and value != 0
        worst = int(np.nanargmax(np.where(np.isfinite(at_one), np.abs(at_one), np.inf)))
        if smooth_nonzero or not np.isfinite(at_one).all() or np.abs(at_one[worst]) > VALUE_TOL * scale:
            shown = value if value is not None else f"{at_one[worst]:.4g} at A = {a[worst]:.3g}"
            raise UserError(f"expression {shorten(text)} is not 0 at r = 1: drift(1, A) = {shown}; a drift must vanish "
                            "when the policy does not move")
    violation = slope_violation(drift, a, scale)
    if violation is not None:
        side, i, slope = violation
        # sympy's derivative of a kink at r = 1 is a one-sided guess: show it for smooth expressions only.
        smooth = not expr.has(*_SMOOTH_BREAKERS)
        shown = _symbolic(sympy.diff(expr, R).subs(R, 1)) if smooth else None
        where = "right" if side > 0 else "left"
        raise UserError(f"expression {shorten(text)} has a non-zero slope at r = 1"
                        + (f": d drift / d r (1, A) = {shown}" if shown is not None else "")
                        + f" ({where} slope {slope:.4g} at A = {a[i]:.3g}); a drift must be flat at r = 1")
    derivative = None if expr.has(*_SMOOTH_BREAKERS) else _symbolic(sympy.diff(expr, R).subs(R, 1))
    if derivative is not None and derivative.is_Number and derivative != 0:
        raise UserError(f"expression {shorten(text)} has a non-zero slope at r = 1: "
                        f"d drift / d r (1, A) = {derivative}")


@DRIFTS.register("expression")
@dataclass(frozen=True)
class ExpressionDrift(Piece):
    """A closed-form drift written as an expression over r and A (see the module docstring for the grammar)."""

    expression: str = "relu((r - clip(r, 1 - eps, 1 + eps)) * A)"
    constants: tuple[tuple[str, float], ...] = (("eps", 0.2),)
    baseline = "the expression drift"  # handcrafted: meta-training other pieces pairs them with it

    def __post_init__(self):
        object.__setattr__(self, "constants", normalize_constants(self.constants))
        names = [name for name, _ in self.constants]
        symbolic = parse_expression(self.expression, names)
        expr = symbolic.subs({sympy.Symbol(n, real=True): sympy.Float(v) for n, v in self.constants})
        for power in expr.atoms(sympy.Pow):  # a constant used as an exponent is known only now
            if power.exp.is_Number and abs(power.exp) > MAX_EXPONENT:
                raise UserError(f"expression {shorten(self.expression)}: exponent {sympy.sstr(power.exp)[:40]} "
                                f"is beyond +-{MAX_EXPONENT}")
        if not expr.free_symbols <= {R, A}:
            raise UserError(f"expression {shorten(self.expression)}: unknown names "
                            f"{sorted(map(str, expr.free_symbols))}")
        fn = _compile(expr)
        check_valid_at_one(expr, fn, self.expression)
        # Not dataclass fields: equality, hashing and the spec see only `expression` and `constants`.
        object.__setattr__(self, "_sympy", expr)
        object.__setattr__(self, "_fn", fn)

    @property
    def sympy(self) -> sympy.Basic:
        """The expression as sympy, constants substituted (free symbols r and A)."""
        return self._sympy

    def __call__(self, meta, inputs: DriftInputs, progress: Progress):
        del meta, progress
        ratio, advantage = inputs
        out = self._fn({R: ratio, A: advantage}, jnp)
        return jnp.broadcast_to(jnp.asarray(out, jnp.result_type(ratio)), jnp.broadcast_shapes(ratio.shape,
                                                                                              advantage.shape))


def expression_drift(expression: str, constants: Any = ()) -> ExpressionDrift:
    """A drift from `expression` over r and A with named `constants` ({name: value} or pairs); refuses, with a
    `UserError`, text outside the grammar and drifts that are not 0 with zero slope at r = 1."""
    return ExpressionDrift(expression=expression, constants=normalize_constants(constants))


PPO_EXPRESSION = ("relu((r - clip(r, 1 - eps, 1 + eps)) * A)", (("eps", 0.2),))
DPO_EXPRESSION = ("where(A >= 0, relu((r - 1)*A - alpha*tanh((r - 1)*A/alpha)), "
                  "relu(log(r)*A - beta*tanh(log(r)*A/beta)))", (("alpha", 2.0), ("beta", 0.6)))
