"""The inner trainer: vmappable over keys and meta-params, deterministic, small metrics."""

from dataclasses import replace

import jax
import numpy as np
import pytest

from metadisco.envs import make_env
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.trainers import make_train
from metadisco.trainers.config import train_config

TINY = train_config(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 6, update_epochs=2, num_minibatches=2,
                   hidden_sizes=(8, 8))
PPO = BUILTIN_OBJECTIVES["ppo"]


@pytest.fixture(scope="module")
def cartpole_train():
    return make_train(TINY, make_env("CartPole-v1"), PPO)


@pytest.fixture(scope="module")
def vmapped(cartpole_train):
    return jax.jit(jax.vmap(cartpole_train, in_axes=(0, None)))


@pytest.mark.heavy
@pytest.mark.slow  # 45 s on 2 cores
def test_vmapped_seeds_equal_single_runs(cartpole_train, vmapped):
    keys = jax.random.split(jax.random.PRNGKey(42), 4)
    batched = vmapped(keys, PPO.zero_meta())
    single = jax.jit(cartpole_train)
    for i in range(4):
        one = single(keys[i], PPO.zero_meta())
        for a, b in zip(jax.tree.leaves(batched), jax.tree.leaves(one), strict=True):
            np.testing.assert_allclose(np.asarray(a)[i], np.asarray(b), rtol=2e-5, atol=2e-6)


def test_same_key_same_result_and_metric_shapes(vmapped):
    keys = jax.random.split(jax.random.PRNGKey(3), 4)  # 4 runs, as above: the same compiled program
    a = vmapped(keys, PPO.zero_meta())
    b = vmapped(keys, PPO.zero_meta())
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)
    assert a.metrics.achievements is None  # CartPole reports none
    for leaf in jax.tree.leaves(a.metrics):
        assert leaf.shape == (4, TINY.num_updates)  # per update only: never the per-step info of a run
    assert not np.array_equal(a.metrics.losses["actor_loss"][0], a.metrics.losses["actor_loss"][1])  # seeds differ


@pytest.mark.slow  # 35 s on 2 cores
def test_vmappable_over_meta_params(cartpole_train):
    """A population axis over meta-params (here the stacked empty pytree plus keys) compiles and runs."""
    from metadisco.objectives import DRIFTS, Objective

    lpo = Objective(drift=DRIFTS.make("lpo", hidden=4))
    train = make_train(TINY, make_env("CartPole-v1"), lpo)
    population = jax.tree.map(lambda x: np.stack([x, x + 0.01]), lpo.zero_meta())
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    out = jax.jit(jax.vmap(jax.vmap(train, in_axes=(0, None)), in_axes=(None, 0)))(keys, population)
    assert out.metrics.losses["actor_loss"].shape == (2, 3, TINY.num_updates)
    assert np.isfinite(out.metrics.losses["actor_loss"]).all()


@pytest.mark.slow  # 19 s on 2 cores
def test_continuous_actions_with_normalisation_and_truncation_count():
    cfg = replace(TINY, num_steps=50, total_timesteps=4 * 50 * 8, normalize_obs=True, normalize_reward=True)
    result = jax.jit(make_train(cfg, make_env("Pendulum-v1"), PPO))(jax.random.PRNGKey(0), PPO.zero_meta())
    m = result.metrics
    assert all(np.isfinite(np.asarray(m.losses[name])).all() for name in ("actor_loss", "value_loss"))
    # Pendulum only ever truncates (200-step limit): 8 updates x 50 steps x 4 envs = 8 episodes.
    assert int(np.sum(m.truncation_count)) == int(np.sum(m.episode_count)) == 8
    finished = np.asarray(m.episode_count) > 0
    assert np.isnan(np.asarray(m.episode_return)[~finished]).all()  # no fake zeros before an episode ends
    assert (np.asarray(m.episode_return)[finished] < 0).all()
