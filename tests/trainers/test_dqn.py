"""DQN as a registered algorithm: its replay buffer, its targets, its trainer at tiny sizes, its objective and
settings; learning at a real size is in the slow tests."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco import BUILTIN_OBJECTIVES, get_preset, make_env
from metadisco.core.errors import UserError
from metadisco.objectives import Objective
from metadisco.rl.replay import replay_add, replay_init, replay_sample
from metadisco.runs.seeds import resolve_config
from metadisco.trainers import make_trainer
from metadisco.trainers.algorithm import algorithm_names, baseline_of, get_algorithm
from metadisco.trainers.config import apply_overrides, config_to_dict
from metadisco.trainers.dqn import DQNOptions, td_targets

DQN = BUILTIN_OBJECTIVES["dqn"]


def tiny(**changes):
    config = replace(get_preset("dqn_classic"), total_timesteps=400, num_envs=4, num_steps=2, hidden_sizes=(16,))
    return apply_overrides(config, {"buffer_size": 64, "buffer_batch": 8, "learning_starts": 40,
                                    "target_update_interval": 24, "eps_anneal_steps": 200, **changes})


@pytest.mark.parametrize("seed", range(20))
def test_replay_buffer_keeps_the_newest_transitions_in_fifo_order(seed):
    rng = np.random.default_rng(seed)
    capacity = int(rng.integers(1, 12))
    buffer = replay_init({"x": jnp.zeros(3), "a": jnp.int32(0)}, capacity)
    added = []
    for _ in range(int(rng.integers(1, 8))):
        n = int(rng.integers(1, capacity + 1))
        batch = {"x": jnp.asarray(rng.normal(size=(n, 3)), jnp.float32),
                 "a": jnp.asarray(rng.integers(0, 100, n), jnp.int32)}
        buffer = replay_add(buffer, batch)
        added += [(np.asarray(batch["x"][i]), int(batch["a"][i])) for i in range(n)]
    size = min(len(added), capacity)
    assert int(buffer.size) == size
    assert int(buffer.position) == len(added) % capacity
    newest = added[-size:]
    for k, (x, a) in enumerate(newest):  # the k-th newest held sits at (position - size + k) mod capacity
        slot = (len(added) - size + k) % capacity
        np.testing.assert_array_equal(np.asarray(buffer.data["x"][slot]), x)
        assert int(buffer.data["a"][slot]) == a
    drawn = replay_sample(buffer, jax.random.PRNGKey(seed), 50)
    held = {int(a) for _, a in newest}
    assert set(np.asarray(drawn["a"]).tolist()) <= held


@pytest.mark.parametrize("seed", range(10))
def test_td_targets_are_dqns_and_double_dqns(seed):
    rng = np.random.default_rng(seed)
    b, a = 7, 4
    q_target = rng.normal(size=(b, a)).astype(np.float32)
    q_online = rng.normal(size=(b, a)).astype(np.float32)
    reward = rng.normal(size=b).astype(np.float32)
    terminated = rng.random(b) < 0.3
    gamma = 0.97
    dqn = td_targets(jnp.asarray(q_target), None, jnp.asarray(reward), jnp.asarray(terminated), gamma)
    double = td_targets(jnp.asarray(q_target), jnp.asarray(q_online), jnp.asarray(reward), jnp.asarray(terminated),
                        gamma)
    bootstrap = np.where(terminated, 0.0, 1.0)
    np.testing.assert_allclose(dqn, reward + gamma * bootstrap * q_target.max(-1), rtol=1e-6)
    chosen = q_target[np.arange(b), q_online.argmax(-1)]
    np.testing.assert_allclose(double, reward + gamma * bootstrap * chosen, rtol=1e-6)


def test_dqn_is_registered_with_its_presets_control_and_options():
    assert "dqn" in algorithm_names()
    algo = get_algorithm("dqn")
    assert algo.control == "dqn" and BUILTIN_OBJECTIVES[algo.control].algorithm == "dqn"
    assert set(algo.presets) == {"classic", "minatar"}
    ddqn = get_algorithm("ddqn")
    assert ddqn.control == "ddqn" and ddqn.options is DQNOptions
    assert get_preset("ddqn_minatar") == replace(get_preset("dqn_minatar"), algorithm="ddqn")
    assert {k: BUILTIN_OBJECTIVES[k].algorithm for k in ("ddqn", "dqn_reg", "dqn_clipped")} == {
        "ddqn": "ddqn", "dqn_reg": "dqn", "dqn_clipped": "dqn"}
    assert resolve_config("CartPole-v1", algorithm="dqn") == get_preset("dqn_classic")
    assert resolve_config("Breakout-MinAtar", algorithm="dqn").options.buffer_size == 300_000
    with pytest.raises(UserError, match="algorithm dqn has no preset for brax/ant"):
        resolve_config("brax/ant", algorithm="dqn")


def test_options_are_settings_addressed_by_name_and_recorded():
    config = resolve_config("CartPole-v1", algorithm="dqn", overrides=["buffer_size=500", "double_q=true"])
    assert config.options == DQNOptions(buffer_size=500, double_q=True, max_grad_norm=10.0)  # the preset's clip
    record = config_to_dict(config)
    assert record["buffer_size"] == 500 and record["double_q"] is True and "algorithm_options" not in record
    # The same settings given in another order, or a default given explicitly, are the same program.
    other = resolve_config("CartPole-v1", algorithm="dqn", overrides=["double_q=true", "buffer_size=500", "tau=1.0"])
    assert other == config and hash(other) == hash(config)
    # A PPO config's record is what it was before algorithms had options.
    assert not {"buffer_size", "double_q", "replay_capacity"} & set(config_to_dict(get_preset("classic")))
    with pytest.raises(UserError, match="setting 'buffer_sise'"):
        resolve_config("CartPole-v1", algorithm="dqn", overrides=["buffer_sise=5"])


def test_dqn_objective_names_its_algorithm_and_round_trips():
    spec = DQN.to_spec()
    assert spec["algorithm"] == {"kind": "dqn"}
    assert Objective.from_spec(spec) == DQN
    assert "algorithm" not in BUILTIN_OBJECTIVES["ppo"].to_spec()  # inferred: older files read the same
    assert "algorithm" not in BUILTIN_OBJECTIVES["pqn"].to_spec()
    assert baseline_of(DQN) == "DQN" and DQN.zero_meta() == {"drift": {}, "value_loss": {}, "optimizer": {}}
    with pytest.raises(UserError, match="objective key 'algorithm' needs"):
        Objective.from_spec({"algorithm": "dqn"})


def test_objectives_and_algorithms_that_do_not_fit_are_refused():
    env = make_env("CartPole-v1")
    with pytest.raises(UserError, match="algorithm dqn needs a DQN objective"):
        make_trainer(tiny(), env, BUILTIN_OBJECTIVES["ppo"])
    with pytest.raises(UserError, match="this objective is for algorithm dqn; give --set algorithm=dqn"):
        make_trainer(get_preset("classic"), env, DQN)
    with pytest.raises(UserError, match="would be evolved for nothing"):
        make_trainer(tiny(), env, Objective.from_spec({**DQN.to_spec(), "drift": {"kind": "lpo"}}))
    with pytest.raises(UserError, match="continuous actions"):
        make_trainer(tiny(), make_env("Pendulum-v1"), DQN)


def test_tiny_dqn_learns_only_once_the_buffer_holds_learning_starts_and_is_deterministic():
    config = tiny()
    trainer = make_trainer(config, make_env("CartPole-v1"), DQN)
    train = jax.jit(trainer.train)
    result = train(jax.random.PRNGKey(0), DQN.zero_meta())
    again = train(jax.random.PRNGKey(0), DQN.zero_meta())
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(jax.tree.leaves(result), jax.tree.leaves(again),
                                                                        strict=True))
    loss = np.asarray(result.metrics.losses["td_loss"])
    assert loss.shape == (config.num_updates,)
    held = np.arange(1, config.num_updates + 1) * config.batch_size  # transitions held after each update
    assert np.all(loss[held < 40] == 0) and np.all(loss[held >= 40] > 0)
    # epsilon-greedy's entropy falls as epsilon anneals
    entropy = np.asarray(result.metrics.diagnostics["entropy"])
    assert entropy[0] > entropy[-1]


def test_steppable_dqn_carries_its_replay_and_target_and_resumes_bit_for_bit():
    trainer = make_trainer(tiny(), make_env("CartPole-v1"), DQN)
    state = trainer.init(jax.random.PRNGKey(3), DQN.zero_meta())
    assert int(state.extra.replay.size) == 0
    half, _ = jax.jit(trainer.step, static_argnums=1)(state, 25)
    whole, _ = jax.jit(trainer.step, static_argnums=1)(state, 50)
    resumed, _ = jax.jit(trainer.step, static_argnums=1)(half, 25)
    assert int(half.extra.replay.size) == 25 * 8 if 25 * 8 < 64 else int(half.extra.replay.size) == 64
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # the target moved (copies every 24 env steps) and is not the online network after the last gradient step
    first = jax.tree.leaves(state.extra.target_params)[0]
    assert not np.array_equal(np.asarray(jax.tree.leaves(whole.extra.target_params)[0]), np.asarray(first))


@pytest.mark.slow  # 15 s on 2 cores
def test_double_q_changes_the_program_and_greedy_episodes_play():
    env = make_env("CartPole-v1")
    # a target that lags far behind a fast-moving online network, so that the two networks' argmax differ
    plain = make_trainer(replace(tiny(target_update_interval=10_000), eval_episodes=4, lr=3e-2), env, DQN)
    double = make_trainer(replace(tiny(target_update_interval=10_000, double_q=True), eval_episodes=4, lr=3e-2),
                          env, DQN)
    a = jax.jit(plain.train)(jax.random.PRNGKey(1), DQN.zero_meta())
    b = jax.jit(double.train)(jax.random.PRNGKey(1), DQN.zero_meta())
    assert not np.array_equal(np.asarray(a.metrics.losses["td_loss"]), np.asarray(b.metrics.losses["td_loss"]))
    returns = np.asarray(a.metrics.eval_return)
    assert np.isnan(returns[:-1]).all() and returns[-1] >= 1.0
    # algorithm ddqn is DQN with double_q, bit for bit
    ddqn_config = replace(tiny(target_update_interval=10_000), eval_episodes=4, lr=3e-2, algorithm="ddqn")
    c = jax.jit(make_trainer(ddqn_config, env, BUILTIN_OBJECTIVES["ddqn"]).train)(jax.random.PRNGKey(1),
                                                                                     DQN.zero_meta())
    for x, y in zip(jax.tree.leaves(b), jax.tree.leaves(c), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("kind", ["learned", "learned_td"])
def test_zero_meta_learned_td_loss_gives_dqn_bit_for_bit(kind):
    """A learned value loss of the error (`learned`) or of the TD target's parts (`learned_td`), DQN's TD loss plus an
    MLP residual, at zero meta-parameters: the run is DQN's, bit for bit; away from zero it differs."""
    from metadisco.objectives.registry import VALUE_LOSSES

    learned = replace(DQN, value_loss=VALUE_LOSSES.make(kind, hidden=(4,)))
    env = make_env("CartPole-v1")
    dqn = jax.jit(make_trainer(tiny(), env, DQN).train)(jax.random.PRNGKey(2), DQN.zero_meta())
    train = jax.jit(make_trainer(tiny(), env, learned).train)
    zero = train(jax.random.PRNGKey(2), learned.zero_meta())
    for a, b in zip(jax.tree.leaves(dqn), jax.tree.leaves(zero), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    moved = train(jax.random.PRNGKey(2), jax.tree.map(lambda x: x + 0.3, learned.zero_meta()))
    assert not np.array_equal(np.asarray(moved.metrics.losses["td_loss"]), np.asarray(dqn.metrics.losses["td_loss"]))
