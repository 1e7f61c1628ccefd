"""Small dense networks whose weights are meta-parameters (plain nested dicts, so objective files hold them).

Zero weights give a network that outputs exactly 0 with exactly-0 gradients: learned pieces are residuals
around their baseline, so zero meta-parameters reproduce the baseline bit for bit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from metadisco.errors import UserError


def zero_mlp(sizes: tuple[int, ...]) -> dict:
    """Zero weights of a Dense stack with layer sizes (inputs, hidden..., outputs):
    {"dense_i": {"kernel": [n_in, n_out], "bias": [n_out]}}."""
    return {f"dense_{i}": {"kernel": jnp.zeros((n_in, n_out), jnp.float32), "bias": jnp.zeros((n_out,), jnp.float32)}
            for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True))}


def apply_mlp(meta: dict, x: jax.Array) -> jax.Array:
    """[..., inputs] -> [..., outputs]: tanh between layers, linear output."""
    n = len(meta)
    for i in range(n):
        layer = meta[f"dense_{i}"]
        x = x @ layer["kernel"] + layer["bias"]
        if i < n - 1:
            x = jnp.tanh(x)
    return x


def check_hidden_sizes(hidden, what: str) -> tuple[int, ...]:
    """`hidden` as a tuple of positive ints (a list from a file, or one int, is accepted), else a UserError."""
    hidden = tuple(hidden) if isinstance(hidden, (list, tuple)) else (hidden,)
    if not hidden or any(not isinstance(h, int) or isinstance(h, bool) or h <= 0 for h in hidden):
        raise UserError(f"{what}: hidden must be one or more positive integers, got {hidden!r}")
    return hidden
