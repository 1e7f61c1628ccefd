"""Q(lambda) returns against a plain numpy reference, over random rollouts with terminals and truncations."""

import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.rl.q_lambda import q_lambda_returns


def reference(rewards, next_max_q, terminated, truncated, gamma, lam):
    """Per env, backwards, in float64, written from the definition (no scan, no vectorisation)."""
    T, N = rewards.shape
    lam = np.broadcast_to(lam, (T, N))
    out = np.zeros((T, N))
    for n in range(N):
        for t in reversed(range(T)):
            if terminated[t, n]:
                out[t, n] = rewards[t, n]
            elif truncated[t, n] or t == T - 1:
                out[t, n] = rewards[t, n] + gamma * next_max_q[t, n]
            else:
                mix = (1 - lam[t, n]) * next_max_q[t, n] + lam[t, n] * out[t + 1, n]
                out[t, n] = rewards[t, n] + gamma * mix
    return out


def random_rollout(seed, T=12, N=5):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    next_max_q = rng.normal(size=(T, N)).astype(np.float32)
    ends = rng.random((T, N))
    terminated = ends < 0.15
    truncated = (ends >= 0.15) & (ends < 0.25)
    assert terminated.any() and truncated.any()
    return rewards, next_max_q, terminated, truncated


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam", [0.0, 0.65, 0.95, 1.0, "per_step"])
def test_matches_the_reference(seed, lam):
    rewards, next_max_q, terminated, truncated = random_rollout(seed)
    if lam == "per_step":
        lam = np.random.default_rng(100 + seed).random(rewards.shape).astype(np.float32)
    got = q_lambda_returns(jnp.asarray(rewards), jnp.asarray(next_max_q), jnp.asarray(terminated),
                           jnp.asarray(truncated), 0.97, lam)
    assert got.shape == rewards.shape
    np.testing.assert_allclose(np.asarray(got), reference(rewards, next_max_q, terminated, truncated, 0.97, lam),
                               rtol=1e-5, atol=1e-5)


def test_a_hand_computed_rollout():
    """One env, 4 steps: a truncation at t=1 and a terminal at t=3; gamma 0.5, lambda 0.5."""
    r = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    q = np.array([[10.0], [20.0], [30.0], [40.0]], np.float32)
    term = np.array([[False], [False], [False], [True]])
    trunc = np.array([[False], [True], [False], [False]])
    g3 = 4.0  # terminal: no bootstrap
    g2 = 3.0 + 0.5 * (0.5 * 30.0 + 0.5 * g3)  # 11.5
    g1 = 2.0 + 0.5 * 20.0  # truncated: bootstrap from the final observation, nothing of the next episode: 12
    g0 = 1.0 + 0.5 * (0.5 * 10.0 + 0.5 * g1)  # 6.5
    got = q_lambda_returns(jnp.asarray(r), jnp.asarray(q), jnp.asarray(term), jnp.asarray(trunc), 0.5, 0.5)
    np.testing.assert_allclose(np.asarray(got)[:, 0], [g0, g1, g2, g3])


def test_lambda_zero_is_one_step_q_learning():
    rewards, next_max_q, terminated, truncated = random_rollout(7)
    got = q_lambda_returns(jnp.asarray(rewards), jnp.asarray(next_max_q), jnp.asarray(terminated),
                           jnp.asarray(truncated), 0.9, 0.0)
    np.testing.assert_allclose(np.asarray(got), rewards + 0.9 * (1 - terminated) * next_max_q, rtol=1e-6, atol=1e-6)
