"""Q(lambda) returns over a rollout, with truncation kept apart from termination (PQN's targets)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def q_lambda_returns(
    rewards: jax.Array,
    next_max_q: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    lam: float | jax.Array,
) -> jax.Array:
    """Peng's Q(lambda) returns computed backwards over a rollout, as PQN uses them (Gallici, Fellows et al.,
    "Simplifying Deep Temporal Difference Learning", ICLR 2025; Peng & Williams 1996):

        G_t = r_t + gamma (1 - term_t) [(1 - lam_t) max_a Q(s'_t, a) + lam_t G_{t+1}]

    where s'_t is the observation step t reached (before any reset). At an episode end the trace is cut: a
    terminal step's return is r_t; a truncated step's is r_t + gamma max_a Q(s'_t, a) (bootstrapped, and no
    return of the next episode flows back). The rollout's last step bootstraps fully: G_{T-1} = r + gamma max Q.
    This is rlax's `lambda_returns` with discount_t = gamma (1 - term_t) and lambda_t = lam_t (1 - end_t).

    Args (all [T, ...], time first, except `lam`):
      rewards:     r_t (already scaled, if the trainer scales rewards).
      next_max_q:  max_a Q(s'_t, a): of the final observation where an episode ended at t, else of s_{t+1}.
      terminated:  the episode ended in a terminal state at t.
      truncated:   the episode was cut by a time limit at t.
      gamma:       discount.
      lam:         lambda, a scalar or per step ([T, ...], e.g. from a learned trace piece); 0 gives one-step
                   Q-learning targets, 1 Monte-Carlo returns within the rollout.
    Returns:
      G [T, ...].
    """
    dtype = next_max_q.dtype
    discount = gamma * (1.0 - terminated.astype(dtype))
    # The trace is cut at episode ends and at the rollout's last step (nothing follows it to mix in).
    cut = jnp.logical_or(terminated, truncated).at[-1].set(True)
    lam = jnp.where(cut, 0.0, jnp.broadcast_to(jnp.asarray(lam, dtype), next_max_q.shape))

    def backward(next_return, xs):
        reward, discount, bootstrap, lam = xs
        g = reward + discount * ((1.0 - lam) * bootstrap + lam * next_return)
        return g, g

    xs = (rewards, discount, next_max_q, lam)
    _, returns = jax.lax.scan(backward, jnp.zeros_like(next_max_q[-1]), xs, reverse=True)
    return returns
