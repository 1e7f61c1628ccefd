"""V-trace (Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance Weighted Actor-Learner
Architectures"): off-policy value targets and policy-gradient advantages from truncated importance weights, as
rlax's `vtrace_td_error_and_advantage` computes them (clip thresholds 1), time first with any batch shape.

    errors, pg_advantage = vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lam)

    c_t     = lam min(1, rho_t)                      td_t = min(1, rho_t) (r_t + discount_t v_t - v_tm1)
    err_t   = td_t + discount_t c_t err_{t+1}        (err after the last step: 0); value target = v_tm1 + err
    q_t     = r_t + discount_t (lam (v_tm1 + err)_{t+1} + (1 - lam) v_tm1_{t+1}), the last q_t bootstraps on v_t
    adv_t   = min(1, rho_t) (q_t - v_tm1)

Shapes: every argument [T, ...] (`lam` a scalar); both results [T, ...], gradients stopped through the targets.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def vtrace(v_tm1: jax.Array, v_t: jax.Array, r_t: jax.Array, discount_t: jax.Array, rho_tm1: jax.Array,
           lam) -> tuple[jax.Array, jax.Array]:
    """(V-trace errors, policy-gradient advantages), [T, ...] each (this module's docstring has the formulas)."""
    lam = jnp.ones_like(discount_t) * lam
    c = jnp.minimum(1.0, rho_tm1) * lam
    clipped_rho = jnp.minimum(1.0, rho_tm1)
    td = clipped_rho * (r_t + discount_t * v_t - v_tm1)

    def backward(acc, xs):
        td_t, discount, c_t = xs
        acc = td_t + discount * c_t * acc
        return acc, acc

    _, errors = jax.lax.scan(backward, jnp.zeros_like(td[0]), (td, discount_t, c), reverse=True)
    errors = jax.lax.stop_gradient(errors + v_tm1) - v_tm1
    targets = errors + v_tm1
    bootstrap = jnp.concatenate([lam[:-1] * targets[1:] + (1 - lam[:-1]) * v_tm1[1:], v_t[-1:]], axis=0)
    q_estimate = r_t + discount_t * bootstrap
    return errors, clipped_rho * (q_estimate - v_tm1)
