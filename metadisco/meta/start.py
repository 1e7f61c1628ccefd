"""Where the ES starts: the objective's baseline, at a point the ES can leave.

Every learnable piece is a residual network around a handcrafted baseline, and all-zero meta-parameters give
the baseline. But all zeros is a saddle for a network with two or more weight layers: a perturbation moves the
output only at second order, and for LPO's bias-free tanh network net(-w) = net(w) exactly, so OpenES's
antithetic pairs score identically and the mean never moves.

`start="hidden"` (the default) keeps the output layer at zero (so the start point still *is* the baseline,
exactly) and draws the hidden layers at random (N(0, scale^2 / fan_in)), so a perturbation of the output
layer changes the objective at first order. `start="zero"` starts at all zeros.

Each piece draws its own start (`Piece.start_meta(key, scale)`; the base's default is `zero_meta()`): LPO /
TA-LPO draw w1 and keep w2 at zero, dense stacks (learned value loss, learned optimiser) draw every kernel but
the last. A plugin's piece with a network overrides `start_meta` likewise.
"""

from __future__ import annotations

import jax

from metadisco.core.errors import unknown_name_error

STARTS = ("hidden", "zero")


def start_point(objective, kind: str, key: jax.Array, scale: float = 1.0):
    """The ES's start point for `objective` (same structure as `objective.zero_meta()`): slot i's piece draws
    from `fold_in(key, i)`, slots in the objective's order."""
    if kind == "zero":
        return objective.zero_meta()
    if kind != "hidden":
        raise unknown_name_error("start", kind, STARTS)
    return {slot: piece.start_meta(jax.random.fold_in(key, i), scale)
            for i, (slot, piece) in enumerate(objective.pieces().items())}
