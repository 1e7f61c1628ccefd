"""The validation boundary for numbers: every number that enters metadisco (command line, `--set`, YAML
configs, objective files, checkpoints) is checked here, once, where it enters.

Each check raises a one-line `UserError` that names the key, echoes the value (shortened, so a 5 MB value is
not printed whole) and says what would be right. `NaN` fails every comparison, so range checks written as
`x <= 0` let it through; the checks here test finiteness first.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from metadisco.core.errors import UserError, shorten

# Seeds: JAX's PRNGKey keeps only the low 32 bits of a seed (2**32 gives the same key as 0), and Python ints
# beyond int64 overflow in it; so a seed is a 32-bit unsigned integer.
SEED_MAX = 2**32 - 1
# Counts that become array sizes or loop lengths inside compiled code are int32 there.
INT32_MAX = 2**31 - 1


def is_number(value: Any) -> bool:
    """A real number that is not a bool (YAML and JSON `true` are ints to Python)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_int(key: str, value: Any, lo: int | None = None, hi: int | None = None, why: str = "") -> int:
    """`value` as an int in [lo, hi] (floats that are whole numbers are accepted), or a `UserError`."""
    span = _span(lo, hi, "an integer")
    if not is_number(value):
        raise UserError(f"{key} must be {span}, got {shorten(value)}")
    if not isinstance(value, numbers.Integral):  # a float (numpy's too) must be a whole, finite number
        value = float(value)
        if not math.isfinite(value) or not value.is_integer():
            raise UserError(f"{key} must be {span}, got {shorten(value)}")
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise UserError(f"{key} must be {span}{f' ({why})' if why else ''}, got {shorten(value)}")
    return value


def check_float(key: str, value: Any, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, hi_open: bool = False) -> float:
    """`value` as a finite float in the interval given (open or closed at each end), or a `UserError`."""
    lo_text = "-inf" if lo is None else f"{lo:g}"
    hi_text = "inf" if hi is None else f"{hi:g}"
    interval = f"{'(' if lo_open or lo is None else '['}{lo_text}, {hi_text}{')' if hi_open or hi is None else ']'}"
    want = "a finite number" + ("" if lo is None and hi is None else f" in {interval}")
    if not is_number(value):
        raise UserError(f"{key} must be {want}, got {shorten(value)}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond float range
        raise UserError(f"{key} must be {want}, got {shorten(value)}") from None
    if not math.isfinite(value):
        raise UserError(f"{key} must be {want}, got {value}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise UserError(f"{key} must be {want}, got {value:g}")
    if hi is not None and (value > hi or (hi_open and value == hi)):
        raise UserError(f"{key} must be {want}, got {value:g}")
    return value


def check_seed(key: str, value: Any) -> int:
    return check_int(key, value, 0, SEED_MAX, "a 32-bit seed: JAX keeps only the low 32 bits")


def check_finite_tree(key: str, value: Any) -> None:
    """Every number inside nested lists / dicts is finite (strategy settings, piece options)."""
    stack = [(key, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            stack.extend((f"{where}.{k}", v) for k, v in node.items())
        elif isinstance(node, (list, tuple)):
            stack.extend((f"{where}.{i}", v) for i, v in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            raise UserError(f"{where} must be a finite number, got {node}")


def _span(lo, hi, what: str) -> str:
    if lo is not None and hi is not None:
        return f"{what} in [{lo:,}, {hi:,}]"
    if lo is not None:
        return f"{what} >= {lo:,}"
    if hi is not None:
        return f"{what} <= {hi:,}"
    return what


# ---------------------------------------------------------------------------------------------------------
# the one coercion engine: plain data (YAML, --set values read as YAML, objective files) -> typed values


def coerce(value: Any, annotation: Any, key: str, int_hi: int | None = None) -> Any:
    """`value` as the type `annotation` (int, float, bool, str, tuples, optionals, frozen dataclasses, mappings),
    or a one-line `UserError` naming `key`. Numbers may come as text (`1e-3`, which YAML 1.1 reads as a string;
    `1e5` for an int), booleans as true / false / yes / no / on / off / 1 / 0, tuples as lists, as
    comma-separated text (`32,16`, or `64x64` for ints) or as one value. Ints are bounded by `int_hi` when given;
    other ranges are the caller's to check."""
    import dataclasses
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value is None and len(args) < len(typing.get_args(annotation)):
            return None
        if isinstance(value, str) and value.strip().lower() in ("none", "null") and len(args) < len(
                typing.get_args(annotation)):
            return None
        sequence = [a for a in args if typing.get_origin(a) is tuple]
        if sequence and isinstance(value, (list, tuple)):  # e.g. `timesteps: [a, b]` for `int | tuple[int, ...]`
            return coerce(value, sequence[0], key, int_hi)
        return coerce(value, args[0], key, int_hi)
    if dataclasses.is_dataclass(annotation):
        from_plain = getattr(annotation, "from_plain", None)
        if from_plain is None:
            raise TypeError(f"{annotation.__name__} has no from_plain(data, key)")
        return from_plain(value, key)
    if origin is tuple:
        args = typing.get_args(annotation)
        inner = args[0]
        if typing.get_origin(inner) is tuple and isinstance(value, (dict, list, tuple)):
            return value  # nested pairs (an expression's constants): the piece checks them itself
        if isinstance(value, str):
            text = value.strip().strip("()[]")
            separators = text.replace("x", ",") if inner is int else text
            value = [v.strip() for v in separators.split(",") if v.strip()]
        if value is None:
            value = []
        if isinstance(value, dict):
            raise UserError(f"{key} must be a list, got {shorten(value)}")
        if not isinstance(value, (list, tuple)):
            value = [value]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(coerce(v, inner, f"{key}.{i}", int_hi) for i, v in enumerate(value))
        return tuple(value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        words = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False,
                 "0": False}
        if isinstance(value, (str, int)) and str(value).strip().lower() in words:
            return words[str(value).strip().lower()]
        raise UserError(f"{key} must be true or false, got {shorten(value)}")
    if annotation is int:
        if isinstance(value, str):
            value = _number(value, key, int)
        return check_int(key, value, hi=int_hi)
    if annotation is float:
        if isinstance(value, str):
            value = _number(value, key, float)
        return check_float(key, value)
    if annotation is str:
        if not isinstance(value, str):
            raise UserError(f"{key} must be a string, got {shorten(value)}")
        return value
    return value


def _number(text: str, key: str, kind: type) -> Any:
    """A number written as text, or the text itself (so that the range check names it)."""
    if len(text) > 400:  # no number is written this long; the check that follows refuses the text
        if kind is float and text.strip().isdigit():
            raise UserError(f"{key} must be a finite number, got {shorten(text)}")
        return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    if math.isinf(value) and "inf" not in text.lower():  # 1e400: say what was typed, not "inf"
        raise UserError(f"{key} must be a finite number, got {shorten(text)}")
    return value
