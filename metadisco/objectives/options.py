"""Type and range checks of an objective piece's options, from the piece's own field annotations.

Options come from YAML configs and objective files, so they are checked like every other value that enters,
by the one coercion engine (`metadisco.core.coerce.coerce`): `eps: "abc"` or `eps: .nan` is refused with the
option's name before the piece is built; int sizes are bounded by int32; a piece lists in `positive_options`
the options that must be > 0. After the piece is built, its meta-parameter count is taken from shapes alone
(nothing is allocated) and bounded (`metadisco.core.limits.check_meta_parameters`), so `hidden: 2000000000` is
refused, not allocated.
"""

from __future__ import annotations

import typing
from typing import Any

from metadisco.core.coerce import INT32_MAX, check_float, coerce


def check_options(label: str, cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """`options` checked against the annotations of `cls`'s fields (floats finite, ints int32, bools bools,
    strings strings, tuples element by element); returns them with ints given for floats made floats."""
    hints = typing.get_type_hints(cls)
    positive = set(getattr(cls, "positive_options", ()))
    out = {}
    for name, value in options.items():
        key = f"{label} option {name}"
        value = coerce(value, hints.get(name, Any), key, int_hi=INT32_MAX)
        if name in positive:
            value = check_float(key, value, 0.0, lo_open=True)
        out[name] = value
    return out


def meta_parameter_count(piece) -> int:
    """The number of meta-parameters of `piece`, from the shapes of `zero_meta()` traced without allocating."""
    import jax
    import numpy as np

    shapes = jax.eval_shape(piece.zero_meta)
    return int(sum(np.prod(x.shape, dtype=np.int64) for x in jax.tree.leaves(shapes)))
