"""Off-policy returns from Q- and state-values: Retrace (Munos et al. 2016, "Safe and Efficient Off-Policy
Reinforcement Learning") and its relatives, as rlax's `general_off_policy_returns_from_q_and_v` computes them."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def off_policy_returns(q: jax.Array, v: jax.Array, rewards: jax.Array, discounts: jax.Array, c: jax.Array
                       ) -> jax.Array:
    """G_t = r_{t+1} + gamma_{t+1} (v_{t+1} - c_{t+1} q_{t+1} + c_{t+1} G_{t+1}), G_{K-1} = r_K + gamma_K v_K.

    c = lambda min(1, pi/mu) is Retrace; c = lambda is Harutyunyan et al.'s Q(lambda); c = pi is Tree-Backup.

    Args (time first; K+1 steps of experience, any trailing batch shape):
      q:         Q under pi of the actions taken at times 1 .. K-1, [K-1, ...].
      v:         values under pi at times 1 .. K, [K, ...].
      rewards:   r at times 1 .. K, [K, ...].
      discounts: gamma at times 1 .. K (0 at a terminal), [K, ...].
      c:         trace weights at times 1 .. K-1, [K-1, ...].
    Returns:
      the returns from times 0 .. K-1, [K, ...], gradients stopped.
    """
    last = rewards[-1] + discounts[-1] * v[-1]

    def backward(acc, xs):
        reward, discount, c_t, v_t, q_t = xs
        acc = reward + discount * (v_t - c_t * q_t + c_t * acc)
        return acc, acc

    _, returns = jax.lax.scan(backward, last, (rewards[:-1], discounts[:-1], c, v[:-1], q), reverse=True)
    return jax.lax.stop_gradient(jnp.concatenate([returns, last[None]], axis=0))
