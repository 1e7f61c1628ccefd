"""Epochs of shuffled minibatches over one rollout's batch: the gradient phase PPO and PQN share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import optax


def minibatch_epochs(params: Any, opt_state: Any, key: jax.Array, batch: Any,
                     grad_fn: Callable[[Any, Any], tuple[Any, Any]], optimizer: optax.GradientTransformation,
                     epochs: int, num_minibatches: int) -> tuple[Any, Any, Any]:
    """`epochs` passes over `batch` (a pytree of [B, ...] leaves), each in a fresh random order cut into
    `num_minibatches` minibatches of B / num_minibatches, one optimiser step per minibatch (PPO, Schulman et al.
    2017; PQN, Gallici, Fellows et al. 2025).

    `grad_fn(params, minibatch) -> (grads, aux)`. Returns (params, opt_state, aux), aux stacked
    [epochs, num_minibatches, ...]. Each epoch splits its key once for its permutation.
    """
    batch_size = jax.tree.leaves(batch)[0].shape[0]
    minibatch_size = batch_size // num_minibatches

    def epoch(carry, _):
        params, opt_state, key = carry
        key, perm_key = jax.random.split(key)
        perm = jax.random.permutation(perm_key, batch_size)
        minibatches = jax.tree.map(
            lambda x: x[perm].reshape((num_minibatches, minibatch_size) + x.shape[1:]), batch)

        def minibatch_step(carry, minibatch):
            params, opt_state = carry
            grads, aux = grad_fn(params, minibatch)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), aux

        (params, opt_state), aux = jax.lax.scan(minibatch_step, (params, opt_state), minibatches)
        return (params, opt_state, key), aux

    (params, opt_state, _), aux = jax.lax.scan(epoch, (params, opt_state, key), None, epochs)
    return params, opt_state, aux
