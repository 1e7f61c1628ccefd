"""Meta-parameters as Python source: float32 arrays written so that reading them back gives the same bits.

Small arrays become nested list literals (readable, diffable); arrays of more than `LITERAL_LIMIT` numbers become
base64 of their little-endian float32 bytes (a 4,096-number kernel as a list is 60 kB of digits nobody reads).
"""

from __future__ import annotations

import textwrap

import numpy as np

from metadisco.core.errors import UserError

LITERAL_LIMIT = 4096  # numbers per array written as a list literal; larger ones as base64 float32
WIDTH = 116  # characters of a wrapped line (ruff's limit is 120)


def float32_literal(x) -> str:
    """The shortest decimal that reads back (float64, then float32, as `jnp.asarray(..., jnp.float32)` does) as
    exactly `x`; the float64 repr of `x` where the short one would round twice to a neighbour."""
    x32 = np.float32(x)
    short = str(x32)
    if np.float32(float(short)) == x32:
        return short
    return repr(float(x32))  # float64 holds every float32 exactly


def _nested(x: np.ndarray, indent: int) -> str:
    if x.ndim == 0:
        return float32_literal(x)
    if x.ndim == 1:
        items = ", ".join(float32_literal(v) for v in x)
        lines = textwrap.wrap(f"[{items}]", WIDTH - indent, break_long_words=False, break_on_hyphens=False)
        return ("\n" + " " * (indent + 1)).join(lines)
    rows = [_nested(row, indent + 1) for row in x]
    return "[" + (",\n" + " " * (indent + 1)).join(rows) + "]"


def array_source(name: str, value, comment: str = "") -> tuple[str, bool]:
    """(`NAME = ...` rebuilding `value` as a float32 jnp array, whether it needs numpy and base64 imported)."""
    x = np.asarray(value, np.float32)
    if not np.isfinite(x).all():
        raise UserError(f"meta-parameter {name} holds non-finite numbers (NaN or inf); an objective with them "
                        "cannot be exported")
    note = f"  # {comment}" if comment else ""
    if x.size <= LITERAL_LIMIT:
        prefix = f"{name} = jnp.asarray("
        body = _nested(x, len(prefix))
        return f"{prefix}{body}, jnp.float32){note}", False
    import base64

    text = base64.b64encode(x.astype("<f4").tobytes()).decode("ascii")
    chunks = textwrap.wrap(text, WIDTH - 8)
    joined = "\n".join(f'    "{c}"' for c in chunks)
    return (f"{name} = jnp.asarray(np.frombuffer(base64.b64decode(\n{joined}\n), \"<f4\").reshape({x.shape!r})){note}",
            True)
