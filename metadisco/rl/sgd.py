"""Epochs of shuffled minibatches over one rollout's batch: the gradient phase PPO and PQN share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax


def minibatch_epochs(params: Any, opt_state: Any, key: jax.Array, batch: Any,
                     grad_fn: Callable[[Any, Any], tuple[Any, Any]], optimizer: optax.GradientTransformation,
                     epochs: int, num_minibatches: int,
                     update_extra_args: Callable[[Any, jax.Array, jax.Array], dict] | None = None
                     ) -> tuple[Any, Any, Any]:
    """`epochs` passes over `batch` (a pytree of [B, ...] leaves), each in a fresh random order cut into
    `num_minibatches` minibatches of B / num_minibatches, one optimiser step per minibatch (PPO, Schulman et al.
    2017; PQN, Gallici, Fellows et al. 2025).

    `grad_fn(params, minibatch) -> (grads, aux)`. Returns (params, opt_state, aux), aux stacked
    [epochs, num_minibatches, ...]. Each epoch splits its key once for its permutation.

    `update_extra_args(aux, epoch, key) -> dict`, when given, adds keyword arguments to every optimiser update
    (an `optax.GradientTransformationExtraArgs`), from that step's aux, its epoch index (int32 scalar) and a key of
    its own (drawn from the epoch's permutation key by `fold_in`, so the permutations stay those drawn without
    it). Without it every step is `optimizer.update(grads, opt_state, params)`, the program it always was.
    """
    extra_args = update_extra_args is not None
    batch_size = jax.tree.leaves(batch)[0].shape[0]
    minibatch_size = batch_size // num_minibatches

    def epoch(carry, epoch_index):
        params, opt_state, key = carry
        key, perm_key = jax.random.split(key)
        perm = jax.random.permutation(perm_key, batch_size)
        minibatches = jax.tree.map(
            lambda x: x[perm].reshape((num_minibatches, minibatch_size) + x.shape[1:]), batch)
        if extra_args:
            minibatches = (minibatches, jax.random.split(jax.random.fold_in(perm_key, 1), num_minibatches))

        def minibatch_step(carry, minibatch):
            params, opt_state = carry
            minibatch, step_key = minibatch if extra_args else (minibatch, None)
            grads, aux = grad_fn(params, minibatch)
            extra = update_extra_args(aux, epoch_index, step_key) if extra_args else {}
            updates, opt_state = optimizer.update(grads, opt_state, params, **extra)
            return (optax.apply_updates(params, updates), opt_state), aux

        (params, opt_state), aux = jax.lax.scan(minibatch_step, (params, opt_state), minibatches)
        return (params, opt_state, key), aux

    epochs_xs = jnp.arange(epochs, dtype=jnp.int32) if extra_args else None
    (params, opt_state, _), aux = jax.lax.scan(epoch, (params, opt_state, key), epochs_xs, epochs)
    return params, opt_state, aux
