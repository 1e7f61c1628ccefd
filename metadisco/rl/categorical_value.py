"""Values as categorical distributions over fixed bins, and the squashing transforms that go with them (rlax's
`transforms.py`, as DiscoRL and MuZero-style agents use them).

A scalar v is squashed by h (Pohlen et al. 2018, "Observe and Look Further"), spread over two neighbouring bins of
an evenly spaced support [min, max] ("two-hot"), and read back as the expectation over the bins followed by h's
inverse. Shapes: scalars [...]; bin probabilities or logits [..., num_bins].
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def signed_logp1(x: jax.Array) -> jax.Array:
    """sign(x) log(1 + |x|)."""
    return jnp.sign(x) * jnp.log1p(jnp.abs(x))


def signed_hyperbolic(x: jax.Array, eps: float = 1e-3) -> jax.Array:
    """h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x (Pohlen et al. 2018)."""
    return jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1) - 1) + eps * x


def signed_parabolic(x: jax.Array, eps: float = 1e-3) -> jax.Array:
    """h's inverse."""
    z = jnp.sqrt(1 + 4 * eps * (eps + 1 + jnp.abs(x))) / 2 / eps - 1 / 2 / eps
    return jnp.sign(x) * (jnp.square(z) - 1)


def two_hot(scalar: jax.Array, min_value: float, max_value: float, num_bins: int) -> jax.Array:
    """The distribution over `num_bins` evenly spaced bins whose mean is `scalar` (clipped to the support), with its
    mass on the two bins around it. [...] -> [..., num_bins]."""
    scalar = jnp.clip(scalar, min_value, max_value)
    position = (scalar - min_value) / (max_value - min_value) * (num_bins - 1)
    lower, upper = jnp.floor(position), jnp.ceil(position)
    lower_value = (lower / (num_bins - 1.0)) * (max_value - min_value) + min_value
    upper_value = (upper / (num_bins - 1.0)) * (max_value - min_value) + min_value
    p_lower = (upper_value - scalar) / (upper_value - lower_value + 1e-5)  # a scalar on a bin puts all on `upper`
    bins = jnp.arange(num_bins)
    return ((lower[..., None] == bins) * p_lower[..., None]
            + (upper[..., None] == bins) * (1 - p_lower)[..., None]).astype(scalar.dtype)


def from_two_hot(probs: jax.Array, min_value: float, max_value: float) -> jax.Array:
    """The mean of a distribution over evenly spaced bins. [..., num_bins] -> [...]."""
    support = jnp.linspace(min_value, max_value, probs.shape[-1]).astype(probs.dtype)
    return jnp.sum(probs * support, axis=-1)


def categorical_value(logits: jax.Array, max_abs_value: float) -> jax.Array:
    """The scalar a categorical value head predicts: h^-1 of the mean of softmax(logits) over bins evenly spaced on
    [-max_abs_value, max_abs_value]. [..., num_bins] -> [...]."""
    return signed_parabolic(from_two_hot(jax.nn.softmax(logits), -max_abs_value, max_abs_value))


def categorical_value_loss(logits: jax.Array, target: jax.Array, max_abs_value: float) -> jax.Array:
    """Cross-entropy of a categorical value head against the two-hot of h(target). The target is not stopped here.
    logits [..., num_bins], target [...] -> [...]."""
    probs = two_hot(signed_hyperbolic(target), -max_abs_value, max_abs_value, logits.shape[-1])
    return -jnp.sum(probs * jax.nn.log_softmax(logits), axis=-1)


def categorical_kl(p_logits: jax.Array, q_logits: jax.Array) -> jax.Array:
    """KL(softmax(p_logits) || softmax(q_logits)) over the last axis. [..., K] -> [...]."""
    log_p = jax.nn.log_softmax(p_logits)
    return jnp.sum(jnp.exp(log_p) * (log_p - jax.nn.log_softmax(q_logits)), axis=-1)
