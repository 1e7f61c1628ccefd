"""The rollout's steps per loop iteration, by platform unless the config says (`trainers.base.rollout_unroll`),
and an unrolled rollout is the same training up to the last bits."""

import dataclasses

import jax
import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.envs import make_env
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.runs.seeds import resolve_config
from metadisco.trainers import base, make_train
from tests.tiny_train import TINY


@pytest.mark.parametrize(("platform", "configured", "expected"),
                         [("gpu", 0, 8), ("cpu", 0, 1), ("tpu", 0, 1), ("gpu", 3, 3), ("cpu", 3, 3)])
def test_rollout_unroll_is_the_configs_or_its_platforms(monkeypatch, platform, configured, expected):
    monkeypatch.setattr(base.jax, "default_backend", lambda: platform)
    assert base.rollout_unroll(dataclasses.replace(TINY, rollout_unroll=configured)) == expected


def test_rollout_unroll_defaults_to_by_platform_and_refuses_negatives():
    assert resolve_config("CartPole-v1").rollout_unroll == 0
    assert resolve_config("CartPole-v1", overrides=["rollout_unroll=4"]).rollout_unroll == 4
    with pytest.raises(UserError, match="rollout_unroll must be a non-negative integer"):
        resolve_config("CartPole-v1", overrides=["rollout_unroll=-1"])


@pytest.mark.heavy
@pytest.mark.slow  # 46 s on 2 cores: two trainers compiled
def test_unrolled_rollout_trains_the_same_agent_up_to_rounding():
    # What a GPU runs by default (8 steps per iteration) against what a CPU runs (1): XLA may fuse the unrolled
    # steps differently, so bits may differ, but after a few updates the agents are the same to float32 rounding.
    env = make_env("CartPole-v1")
    ppo = BUILTIN_OBJECTIVES["ppo"]
    results = []
    for unroll in (1, 8):
        train = make_train(dataclasses.replace(TINY, rollout_unroll=unroll), env, ppo)
        results.append(jax.jit(train)(jax.random.PRNGKey(3), ppo.zero_meta()))
    for a, b in zip(jax.tree.leaves(results[0].params), jax.tree.leaves(results[1].params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(results[0].metrics.episode_count),
                                  np.asarray(results[1].metrics.episode_count))
