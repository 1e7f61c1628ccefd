"""Seeds and methods x seeds sharded over the 4 CPU devices of the test session (conftest): bit-identical when
repeated on the same device count, padded when the run count does not divide, and any device subset works."""

import jax
import numpy as np
import pytest

from metadisco.envs import make_env
from metadisco.evaluate.methods import Method
from metadisco.evaluate.runner import _compiled, train_env
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.parallel import sharding
from metadisco.runs.seeds import seed_keys, train_seeds
from metadisco.trainers import make_train
from metadisco.trainers.config import train_config

# The smallest trainer program (one epoch of one minibatch, one hidden layer): each test compiles its own.
TINY = train_config(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 6, update_epochs=1, num_minibatches=1,
                   hidden_sizes=(8,))
PPO = BUILTIN_OBJECTIVES["ppo"]
ENV = "CartPole-v1"


def assert_bit_identical(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_session_has_four_devices():
    assert jax.local_device_count() == 4  # conftest; every test below relies on it


@pytest.mark.parametrize("runs, devices, padded", [(1, 4, 4), (4, 4, 4), (5, 4, 8), (6, 4, 8), (3, 1, 3)])
def test_padded_size(runs, devices, padded):
    assert sharding.padded_size(runs, devices) == padded


def test_place_pads_with_copies_and_gather_drops_them():
    devices = jax.local_devices()
    (keys, shared) = sharding.place((np.arange(10).reshape(5, 2), np.ones(3)), devices, (0, None))
    assert keys.shape == (8, 2) and len(keys.sharding.device_set) == 4
    np.testing.assert_array_equal(np.asarray(keys)[5:], np.arange(6).reshape(3, 2))  # the first runs again
    assert shared.shape == (3,) and shared.sharding.is_fully_replicated
    np.testing.assert_array_equal(sharding.gather(keys, 5), np.arange(10).reshape(5, 2))


@pytest.fixture(scope="module")
def five_seeds():
    """5 seeds (does not divide by 4: padded to 8) over the 4 devices."""
    return train_seeds(ENV, PPO, PPO.zero_meta(), TINY, 5, seed=3)


@pytest.mark.slow  # 11 s on 2 cores
def test_sharded_train_is_bit_identical_when_repeated(five_seeds):
    again = train_seeds(ENV, PPO, PPO.zero_meta(), TINY, 5, seed=3)  # traced and compiled anew
    assert five_seeds.devices == again.devices == 4
    assert five_seeds.metrics.losses["actor_loss"].shape == (5, TINY.num_updates)
    assert_bit_identical(five_seeds.metrics, again.metrics)
    np.testing.assert_array_equal(five_seeds.final_return, again.final_return)
    actor_loss = five_seeds.metrics.losses["actor_loss"]
    assert not np.array_equal(actor_loss[0], actor_loss[1])  # seeds differ


def test_padding_leaves_each_seed_its_own_run(five_seeds):
    """Seed i of 5 (padded to 8) is seed i of 8: the same key at the same place on the same device."""
    np.testing.assert_array_equal(np.asarray(seed_keys(8, 3))[:5], np.asarray(seed_keys(5, 3)))
    eight = train_seeds(ENV, PPO, PPO.zero_meta(), TINY, 8, seed=3)
    assert_bit_identical(five_seeds.metrics, jax.tree.map(lambda x: x[:5], eight.metrics))


@pytest.mark.slow  # 11 s on 2 cores
def test_one_device_trains_the_same_seeds(five_seeds):
    """On one device each seed is the same run up to float reassociation: statistically the same, and the
    first rollout (before any update) sees the same episodes."""
    one = train_seeds(ENV, PPO, PPO.zero_meta(), TINY, 5, seed=3, devices=jax.local_devices()[:1])
    assert one.devices == 1 and one.metrics.losses["actor_loss"].shape == (5, TINY.num_updates)
    np.testing.assert_array_equal(one.metrics.episode_count[:, 0], five_seeds.metrics.episode_count[:, 0])
    np.testing.assert_allclose(one.metrics.losses["actor_loss"], five_seeds.metrics.losses["actor_loss"], rtol=1e-3,
                               atol=1e-5)


@pytest.mark.slow  # 15 s on 2 cores
def test_a_seed_alone_on_a_device_is_the_plain_call():
    """One run per device runs unbatched: seed i is exactly jax.jit(train)(key_i)."""
    sharded = train_seeds(ENV, PPO, PPO.zero_meta(), TINY, 4, seed=3)
    assert sharded.devices == 4
    train = jax.jit(make_train(TINY, make_env(ENV), PPO))
    for i, key in enumerate(seed_keys(4, 3)):
        alone = train(key, PPO.zero_meta()).metrics
        assert_bit_identical(jax.tree.map(lambda x, i=i: x[i], sharded.metrics), alone)


@pytest.mark.heavy
@pytest.mark.slow  # 26 s on 2 cores
def test_sharded_evaluate_is_bit_identical_when_repeated():
    """2 methods sharing one compiled call x 3 seeds = 6 runs over 4 devices (padded to 8), twice."""
    methods = [Method("ppo", "ppo", PPO, PPO.zero_meta()), Method("ppo_b", "ppo", PPO, PPO.zero_meta())]
    first = train_env(ENV, methods, TINY, 3, seed=1)
    _compiled.cache_clear()  # trace and compile anew
    second = train_env(ENV, methods, TINY, 3, seed=1)
    for label in ("ppo", "ppo_b"):
        assert first[label].curves.episode_return.shape == (3, TINY.num_updates)
        assert_bit_identical(first[label].curves, second[label].curves)
        for field in ("final_return", "mean_return", "diverged"):
            np.testing.assert_array_equal(getattr(first[label], field), getattr(second[label], field))
    # The same method and keys on other devices (runs 0-2 and 3-5) give the very same runs.
    assert_bit_identical(first["ppo"].curves, first["ppo_b"].curves)
