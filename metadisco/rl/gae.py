"""Generalised advantage estimation with truncation kept apart from termination."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    lam: float,
    unroll: int = 16,
) -> tuple[jax.Array, jax.Array]:
    """GAE(gamma, lambda) over a rollout (Schulman et al. 2016).

    Args (all [T, ...], time first):
      rewards:     r_t.
      values:      V(s_t).
      next_values: V of the observation step t reached, before any reset (the final observation of an
                   episode that ended at t, else s_{t+1}).
      terminated:  the episode ended in a terminal state at t: no bootstrap.
      truncated:   the episode was cut by a time limit at t: bootstrap from `next_values`, but do not let
                   the advantage of the next episode flow back.
      unroll:      steps per iteration of the compiled reverse scan. Everything but the recursion itself is computed
                   before it, so an iteration is one multiply-add per step: unrolling changes no number, and on a GPU,
                   where each loop iteration is a round of kernel launches, it removes most of the GAE's iterations
                   (PureJaxRL unrolls 16).
    Returns:
      (advantages, targets), both [T, ...]; targets = advantages + values.
    """
    terminated = terminated.astype(values.dtype)
    episode_end = jnp.logical_or(terminated > 0, truncated).astype(values.dtype)
    deltas = rewards + gamma * (1.0 - terminated) * next_values - values
    decay = gamma * lam * (1.0 - episode_end)

    def backward(carry, xs):
        delta, decay = xs
        advantage = delta + decay * carry
        return advantage, advantage

    _, advantages = jax.lax.scan(backward, jnp.zeros_like(values[0]), (deltas, decay), reverse=True,
                                 unroll=unroll)
    return advantages, advantages + values
