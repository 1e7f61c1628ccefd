"""Craftax through the optional `craftax` extra: listed when installed, a one-line error naming the extra when not;
termination and truncation told apart; `metadisco train` with PPO and PQN end to end at a tiny budget."""

import json

import pytest

from metadisco.cli import main
from metadisco.envs import registry
from metadisco.envs.craftax_adapter import available

ENV = "craftax/Craftax-Classic-Symbolic-v1"
TINY = ["--set", "num_envs=4", "--set", "num_steps=32", "--set", "hidden_sizes=16,16", "--set", "update_epochs=1",
        "--set", "num_minibatches=2", "--set", "final_window=1.0"]


def test_without_craftax_the_error_names_the_extra(monkeypatch, capsys):
    import metadisco.envs.craftax_adapter as adapter

    monkeypatch.setattr(adapter, "available", lambda: False)
    registry.craftax_ids.cache_clear()
    try:
        assert main(["train", "--env", ENV, "--out", "/nonexistent/x"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "pip install -e '.[craftax]'" in err
        assert ENV not in registry.env_ids()
    finally:
        registry.craftax_ids.cache_clear()


# CI installs only `.[dev]`: there the tests below skip, and the one above still checks the error.
needs_craftax = pytest.mark.skipif(not available(), reason="needs the craftax extra: pip install -e '.[craftax]'")


@needs_craftax
def test_listed_with_its_spec(capsys):
    assert ENV in registry.env_ids() and "craftax/Craftax-Symbolic-v1" in registry.env_ids()
    spec = registry.env_spec(ENV)
    assert spec.obs_shape == (1345,) and spec.discrete and spec.action_size == 17


@needs_craftax
def test_time_limit_is_truncation_and_death_is_termination():
    import jax
    import jax.numpy as jnp
    import numpy as np

    env = registry.make_env(ENV)
    _, state = env.reset(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    state = state.replace(achievements=state.achievements.at[0].set(True))  # collect_wood, say
    out_of_time = state.replace(timestep=jnp.asarray(env.params.max_timesteps, state.timestep.dtype))
    new, out = step(jax.random.PRNGKey(1), out_of_time, jnp.int32(0))
    assert bool(out.truncated) and not bool(out.terminated) and int(new.timestep) == 0  # reset
    assert float(out.info["achievements"][0]) == 1.0 and float(np.sum(out.info["achievements"])) == 1.0
    dead = state.replace(player_health=jnp.zeros_like(state.player_health))
    _, out = step(jax.random.PRNGKey(1), dead, jnp.int32(0))
    assert bool(out.terminated) and not bool(out.truncated)
    _, out = step(jax.random.PRNGKey(1), state, jnp.int32(0))
    assert not bool(out.terminated | out.truncated) and float(np.sum(out.info["achievements"])) == 0.0


@needs_craftax
@pytest.mark.parametrize("objective", ["ppo", "pqn"])
def test_train_end_to_end_with_achievements(objective, tmp_path):
    out = tmp_path / objective
    assert main(["train", "--env", ENV, "--objective", objective, "--timesteps", str(4 * 32 * 3), *TINY,
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["algorithm"] == objective and summary["losses_finite"] == [True]
    achievements = summary["achievements"]
    assert len(achievements) == 1 + 22 and "collect_wood" in achievements
    assert achievements["episodes"] >= 0
