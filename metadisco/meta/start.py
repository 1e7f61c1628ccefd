"""Where the ES starts: the objective's baseline, at a point the ES can leave.

Every learnable piece is a residual network around a handcrafted baseline, and all-zero meta-parameters give
the baseline. But all zeros is a saddle for a network with two or more weight layers: a perturbation moves the
output only at second order, and for LPO's bias-free tanh network net(-w) = net(w) exactly, so OpenES's
antithetic pairs score identically and the mean never moves.

`start="hidden"` (the default) keeps the output layer at zero (so the start point still *is* the baseline,
exactly) and draws the hidden layers at random (N(0, scale^2 / fan_in)), so a perturbation of the output
layer changes the objective at first order. `start="zero"` starts at all zeros.

Recognised networks: LPO / TA-LPO ({"w1", "w2"}) and dense stacks ({"dense_0", ..., "dense_k"}); any other
meta-parameter subtree starts at zero.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp

from metadisco.errors import unknown_name_error

STARTS = ("hidden", "zero")
_DENSE = re.compile(r"^dense_(\d+)$")


def _random(key, leaf, scale):
    fan_in = leaf.shape[0] if leaf.ndim >= 2 else 1
    return (scale / jnp.sqrt(fan_in)) * jax.random.normal(key, leaf.shape, leaf.dtype)


def _start_subtree(key, tree, scale):
    if not isinstance(tree, dict) or not tree:
        return tree
    keys = set(tree)
    if keys == {"w1", "w2"}:  # LPO: tanh(x @ w1) @ w2; w2 stays 0
        return {"w1": _random(key, tree["w1"], scale), "w2": tree["w2"]}
    if all(_DENSE.match(k) for k in keys):  # dense stack: every layer but the last at random
        last = max(int(_DENSE.match(k).group(1)) for k in keys)
        out = {}
        for i, k in enumerate(sorted(keys)):
            layer = tree[k]
            if int(_DENSE.match(k).group(1)) == last or not isinstance(layer, dict) or "kernel" not in layer:
                out[k] = layer
            else:
                out[k] = {**layer, "kernel": _random(jax.random.fold_in(key, i), layer["kernel"], scale)}
        return out
    return {k: _start_subtree(jax.random.fold_in(key, i), v, scale) for i, (k, v) in enumerate(sorted(tree.items()))}


def start_point(objective, kind: str, key: jax.Array, scale: float = 1.0):
    """The ES's start point for `objective` (same structure as `objective.zero_meta()`)."""
    zero = objective.zero_meta()
    if kind == "zero":
        return zero
    if kind != "hidden":
        raise unknown_name_error("start", kind, STARTS)
    return {slot: _start_subtree(jax.random.fold_in(key, i), sub, scale) for i, (slot, sub) in enumerate(zero.items())}
