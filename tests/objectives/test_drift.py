"""The PPO and DPO drifts: mirror learning's loss equals PPO's textbook surrogate; drift invariants."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.objectives import DRIFTS, DriftInputs, Progress
from metadisco.objectives.drift import dpo_drift, ppo_drift

PROGRESS = Progress(jnp.float32(0.3), jnp.float32(100.0))


def mirror_loss(drift_fn, ratio, adv):
    return -jnp.mean(ratio * adv - drift_fn(ratio, adv))


def clipped_surrogate_loss(ratio, adv, eps=0.2):
    return -jnp.mean(jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - eps, 1 + eps) * adv))


@pytest.mark.parametrize("seed", range(10))
def test_ppo_drift_gives_the_clipped_surrogate_loss_and_gradient(seed):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    log_ratio = jax.random.normal(k1, (512,)) * 0.5
    adv = jax.random.normal(k2, (512,)) * 3.0

    def via_drift(lr):
        return mirror_loss(ppo_drift, jnp.exp(lr), adv)

    def textbook(lr):
        return clipped_surrogate_loss(jnp.exp(lr), adv)

    np.testing.assert_allclose(via_drift(log_ratio), textbook(log_ratio), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jax.grad(via_drift)(log_ratio), jax.grad(textbook)(log_ratio), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("name", ["ppo", "dpo"])
def test_handcrafted_drifts_are_valid(name):
    """>= 0 everywhere, 0 at r = 1 and zero slope there, for many random (r, A)."""
    drift = DRIFTS.make(name)
    key = jax.random.PRNGKey(1)
    ratio = jnp.exp(jax.random.uniform(key, (4096,), minval=-2.0, maxval=2.0))
    adv = jax.random.normal(jax.random.fold_in(key, 1), (4096,)) * 4.0
    values = drift({}, DriftInputs(ratio, adv), PROGRESS)
    assert jnp.all(values >= 0.0)
    ones = jnp.ones_like(adv)
    np.testing.assert_allclose(drift({}, DriftInputs(ones, adv), PROGRESS), 0.0, atol=1e-7)
    slope = jax.vmap(jax.grad(lambda r, a: drift({}, DriftInputs(r, a), PROGRESS)))(ones, adv)
    np.testing.assert_allclose(slope, 0.0, atol=1e-6)


def test_dpo_matches_its_closed_form():
    r = jnp.array([0.5, 1.5, 2.0, 0.7])
    a = jnp.array([1.0, 3.0, -2.0, -0.5])
    x_pos = (r - 1) * a
    x_neg = jnp.log(r) * a
    expected = jnp.where(a >= 0, jax.nn.relu(x_pos - 2.0 * jnp.tanh(x_pos / 2.0)),
                         jax.nn.relu(x_neg - 0.6 * jnp.tanh(x_neg / 0.6)))
    np.testing.assert_allclose(dpo_drift(r, a), expected, rtol=1e-6)


def test_unknown_drift_lists_known_names():
    from metadisco.core.errors import UserError

    with pytest.raises(UserError, match="unknown drift 'ppp'"):
        DRIFTS.make("ppp")
