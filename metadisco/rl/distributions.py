"""Action distributions as small pure functions: categorical (logits) and diagonal Gaussian (mean, log_std).

Shapes: `logits` [..., A]; `mean`, `log_std` [..., D]; discrete actions [...] int32; continuous [..., D].
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def categorical_sample(key: jax.Array, logits: jax.Array) -> jax.Array:
    return jax.random.categorical(key, logits).astype(jnp.int32)


def categorical_log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    log_p = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(log_p, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: jax.Array) -> jax.Array:
    log_p = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)


def gaussian_sample(key: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    return mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)


def gaussian_log_prob(mean: jax.Array, log_std: jax.Array, action: jax.Array) -> jax.Array:
    z = (action - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi), axis=-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    return jnp.sum(log_std + 0.5 * math.log(2 * math.pi * math.e), axis=-1)
