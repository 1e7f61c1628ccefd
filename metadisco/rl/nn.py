"""Network building blocks shared by every network of the package (the agents' and the objectives' own):
orthogonal initialisation and the one dense-stack convention (`mlp`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp


def orthogonal(scale: float = 1.0, iterations: int = 40):
    """Orthogonal initialiser built from matrix products only (Newton-Schulz polar decomposition).

    The polar factor U V^T of a Gaussian matrix is a uniformly random orthogonal (Stiefel) matrix, like the
    QR-based initialiser. Why not QR: vmapped over seeds, QR becomes a batched LAPACK call whose nested
    thread-pool parallelism deadlocks XLA's CPU runtime on small machines (seen here on 2 cores, inside
    `orgqr`'s ParallelBatchMap). Matmuls have no such nesting.

    The iterations are a `fori_loop`, not a Python loop: unrolled, the 40 iterations of the 6 kernels of an
    actor-critic were a third of the trainer's HLO (10.5k of 19.8k lines) and about 20% of its compile time.
    The loop computes the same products in the same order, so the parameters are bit-identical (tested).
    """

    def step(_, x):
        return 1.5 * x - 0.5 * x @ (x.T @ x)

    def init(key, shape, dtype=jnp.float32):
        rows, cols = math.prod(shape[:-1]), shape[-1]
        tall = rows >= cols
        a = jax.random.normal(key, (rows, cols) if tall else (cols, rows), jnp.float32)
        x = a / jnp.linalg.norm(a)  # all singular values <= 1: inside the iteration's basin
        x = jax.lax.fori_loop(0, iterations, step, x)
        q = x if tall else x.T
        return (scale * q).reshape(shape).astype(dtype)

    return init


def mlp(layers: Sequence[Callable[[jax.Array], jax.Array]], x: jax.Array, activation=jnp.tanh,
        activate_last: bool = False) -> jax.Array:
    """The one dense stack of the package: each layer, then `activation`, except after the last unless
    `activate_last` (the actor-critic's towers end in their heads; an objective piece's network ends linear)."""
    for i, layer in enumerate(layers):
        x = layer(x)
        if activate_last or i < len(layers) - 1:
            x = activation(x)
    return x


def lstm_cell(gates: jax.Array, cell: jax.Array) -> tuple[jax.Array, jax.Array]:
    """An LSTM's step from its pre-activations, in Haiku's convention (`hk.LSTM`, which DeepMind's released
    networks use): `gates` = one linear layer of [x, h], [..., 4H] in the order i, g, f, o, and the forget gate
    sigma(f + 1). flax's `LSTMCell` differs (a layer per gate, no +1). Returns (hidden, cell), [..., H] each."""
    i, g, f, o = jnp.split(gates, 4, axis=-1)
    cell = jax.nn.sigmoid(f + 1) * cell + jax.nn.sigmoid(i) * jnp.tanh(g)
    return jax.nn.sigmoid(o) * jnp.tanh(cell), cell


def gru_cell(params: dict, x: jax.Array, h: jax.Array) -> jax.Array:
    """A GRU's step in flax's `GRUCell` convention (Cho et al. 2014; the reset gate inside the candidate's
    recurrent term), from plain weights {"input": [F, 3H], "hidden": [H, 3H], "bias": [3H], "hidden_bias": [H]}
    with gates in the order r, z, n: x [..., F], h [..., H] -> h' [..., H]."""
    xr, xz, xn = jnp.split(x @ params["input"] + params["bias"], 3, axis=-1)
    hr, hz, hn = jnp.split(h @ params["hidden"], 3, axis=-1)
    r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * (hn + params["hidden_bias"]))
    return (1.0 - z) * n + z * h
