"""Type and range checks of an objective piece's options, from the piece's own field annotations.

Options come from YAML configs and objective files, so they are checked like every other number that enters
(`metadisco.validate`): `eps: "abc"` or `eps: .nan` is refused with the option's name before the piece is
built; int sizes are bounded by int32; a piece lists in `positive_options` the options that must be > 0.
After the piece is built, its meta-parameter count is taken from shapes alone (nothing is allocated) and
bounded (`metadisco.limits.check_meta_parameters`), so `hidden: 2000000000` is refused, not allocated.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from metadisco.errors import UserError
from metadisco.validate import INT32_MAX, check_float, check_int, shorten


def check_options(label: str, cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """`options` checked against the annotations of `cls`'s fields (floats finite, ints int32, bools bools,
    strings strings, tuples element by element); returns them with ints given for floats made floats."""
    hints = typing.get_type_hints(cls)
    positive = set(getattr(cls, "positive_options", ()))
    out = {}
    for name, value in options.items():
        key = f"{label} option {name}"
        value = _check(value, hints.get(name, Any), key)
        if name in positive:
            value = check_float(key, value, 0.0, lo_open=True)
        out[name] = value
    return out


def _check(value: Any, annotation: Any, key: str) -> Any:
    origin = typing.get_origin(annotation)
    if annotation is float:
        return check_float(key, value)
    if annotation is int:
        return check_int(key, value, hi=INT32_MAX)
    if annotation is bool:
        if not isinstance(value, bool):
            raise UserError(f"{key} must be true or false, got {shorten(value)}")
        return value
    if annotation is str:
        if not isinstance(value, str):
            raise UserError(f"{key} must be a string, got {shorten(value)}")
        return value
    if origin is tuple:
        args = typing.get_args(annotation)
        if isinstance(value, dict) or (len(args) == 2 and args[1] is Ellipsis and typing.get_origin(args[0])):
            return value  # nested pairs (an expression's constants): the piece checks them itself
        if len(args) == 2 and args[1] is Ellipsis:
            items = value if isinstance(value, (list, tuple)) else (value,)  # one size for a tuple of sizes
            return tuple(_check(v, args[0], f"{key}.{i}") for i, v in enumerate(items))
        return value
    if origin in (types.UnionType, typing.Union):
        if value is None:
            return None
        return _check(value, [a for a in typing.get_args(annotation) if a is not type(None)][0], key)
    return value


def meta_parameter_count(piece) -> int:
    """The number of meta-parameters of `piece`, from the shapes of `zero_meta()` traced without allocating."""
    import jax
    import numpy as np

    shapes = jax.eval_shape(piece.zero_meta)
    return int(sum(np.prod(x.shape, dtype=np.int64) for x in jax.tree.leaves(shapes)))

