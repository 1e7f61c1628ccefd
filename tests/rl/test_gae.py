import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.rl.gae import gae


def test_gae_bootstraps_at_truncation_not_at_termination():
    # One env, four steps: step 1 terminates, step 3 is truncated by a time limit.
    gamma, lam = 0.9, 0.8
    rewards = jnp.array([1.0, 2.0, 3.0, 4.0])
    values = jnp.array([0.5, 0.6, 0.7, 0.8])
    next_values = jnp.array([0.6, 99.0, 0.8, 10.0])  # 99: the terminal state's value must be ignored
    terminated = jnp.array([False, True, False, False])
    truncated = jnp.array([False, False, False, True])
    adv, targets = gae(rewards, values, next_values, terminated, truncated, gamma, lam)

    d3 = 4.0 + gamma * 10.0 - 0.8  # truncated: bootstrap from the final observation's value
    d2 = 3.0 + gamma * 0.8 - 0.7
    d1 = 2.0 - 0.6  # terminated: no bootstrap
    d0 = 1.0 + gamma * 0.6 - 0.5
    expected = np.array([d0 + gamma * lam * d1, d1, d2 + gamma * lam * d3, d3])
    np.testing.assert_allclose(adv, expected, rtol=1e-6)
    np.testing.assert_allclose(targets, expected + np.asarray(values), rtol=1e-6)


def test_gae_without_episode_ends_matches_discounted_sum_of_deltas():
    rng = np.random.default_rng(0)
    for _ in range(20):
        T, N = 7, 3
        r, v, nv = (rng.normal(size=(T, N)).astype(np.float32) for _ in range(3))
        nv[:-1] = v[1:]  # consistent next values inside the rollout
        gamma, lam = rng.uniform(0.5, 1.0), rng.uniform(0.0, 1.0)
        adv, _ = gae(jnp.asarray(r), jnp.asarray(v), jnp.asarray(nv), jnp.zeros((T, N), bool),
                     jnp.zeros((T, N), bool), gamma, lam)
        deltas = r + gamma * nv - v
        expected = np.array([sum((gamma * lam) ** k * deltas[t + k] for k in range(T - t)) for t in range(T)])
        np.testing.assert_allclose(adv, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # 11 s on 2 cores
def test_gae_unrolled_equals_one_step_per_iteration_bit_for_bit():
    # Unrolling the reverse scan moves loop boundaries only: every step computes the same multiply-add, so the
    # advantages are the same bits for any rollout, episode ends included.
    rng = np.random.default_rng(0)
    compiled = jax.jit(gae, static_argnames="unroll")
    for trial in range(40):
        t, n = (1, 5, 33, 64)[trial % 4], 3  # few shapes: each compiles the scan once per unroll
        rewards, values, next_values = (jnp.asarray(rng.normal(size=(t, n)) * 10 ** rng.uniform(-3, 3), jnp.float32)
                                        for _ in range(3))
        terminated = jnp.asarray(rng.random((t, n)) < 0.1)
        truncated = jnp.asarray(rng.random((t, n)) < 0.1)
        gamma, lam = float(rng.uniform(0.8, 1.0)), float(rng.uniform(0.0, 1.0))
        reference = compiled(rewards, values, next_values, terminated, truncated, gamma, lam, unroll=1)
        for unroll in (2, 7, 16, 128):
            unrolled = compiled(rewards, values, next_values, terminated, truncated, gamma, lam, unroll=unroll)
            for a, b in zip(reference, unrolled, strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=f"trial {trial}, unroll {unroll}")
