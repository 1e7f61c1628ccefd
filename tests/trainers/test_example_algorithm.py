"""A new algorithm registered from one module outside the package (`tests/trainers/example_algorithm.py`, A2C): the
framework builds, trains, plays and checks it through its record alone."""

import importlib
import sys

import jax
import numpy as np
import pytest

from metadisco import get_algorithm, make_env, make_trainer
from metadisco.core.errors import UserError
from metadisco.objectives import Objective
from metadisco.runs.seeds import resolve_config, train_seeds
from metadisco.trainers import algorithm as registry
from metadisco.trainers.greedy import make_greedy_returns

A2C = Objective.from_spec({"algorithm": {"kind": "a2c"}, "value_loss": {"kind": "l2"}})
MODULE = "tests.trainers.example_algorithm"


@pytest.fixture(autouse=True, scope="module")
def registered():
    """The module imported (which registers "a2c") for these tests only: other tests in the same process see the
    built-in algorithms alone (a setting's readers, the preset list)."""
    importlib.import_module(MODULE)
    yield
    registry._ALGORITHMS.pop("a2c", None)
    sys.modules.pop(MODULE, None)


def test_the_registered_algorithm_has_its_presets_settings_and_checks():
    assert get_algorithm("a2c").summary.startswith("A2C")
    config = resolve_config("CartPole-v1", algorithm="a2c", timesteps=2048, overrides=["lr=1e-3"])
    assert config.algorithm == "a2c" and config.num_envs == 16 and config.lr == 1e-3
    with pytest.raises(UserError, match="update_epochs is a setting of algorithm ppo and pqn, not of a2c"):
        resolve_config("CartPole-v1", algorithm="a2c", overrides=["update_epochs=2"])
    with pytest.raises(UserError, match="algorithm a2c needs an objective that names it"):
        make_trainer(config, make_env("CartPole-v1"), Objective())


def test_it_trains_and_plays_greedy_episodes_through_the_shared_pieces():
    config = resolve_config("CartPole-v1", algorithm="a2c", timesteps=16 * 8 * 20, overrides=["hidden_sizes=16"])
    result = train_seeds("CartPole-v1", A2C, A2C.zero_meta(), config, num_seeds=2)
    assert result.metrics.episode_return.shape == (2, 20) and np.isfinite(result.metrics.losses["value_loss"]).all()
    env = make_env("CartPole-v1")
    trainer = make_trainer(config, env, A2C)
    state, _ = jax.jit(trainer.step, static_argnums=1)(trainer.init(jax.random.PRNGKey(0), A2C.zero_meta()), 3)
    returns = make_greedy_returns(config, env, 4)(state.params, jax.random.PRNGKey(1), state.env_state)
    assert returns.shape == (4,) and np.all(returns >= 1)
