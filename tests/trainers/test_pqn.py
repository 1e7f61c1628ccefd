"""The PQN trainer: same call shape as PPO's, deterministic, truncation counted; zero meta-parameters of every
learned piece it calls give PQN exactly (through a training run); objectives are checked against the algorithm."""

import functools
from dataclasses import replace

import jax
import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.envs import make_env
from metadisco.objectives import (
    BUILTIN_OBJECTIVES,
    DRIFTS,
    OPTIMIZERS,
    TRACES,
    VALUE_LOSSES,
    Progress,
    TraceInputs,
)
from metadisco.trainers import make_trainer
from metadisco.trainers.config import get_preset
from metadisco.trainers.pqn import epsilon_greedy_entropy

TINY = get_preset("pqn_classic").with_settings(dict(num_envs=4, num_steps=8, total_timesteps=4 * 8 * 6,
                                                    update_epochs=2, num_minibatches=2, hidden_sizes=(8, 8)))
PQN = BUILTIN_OBJECTIVES["pqn"]


@functools.cache
def trainer(objective, config=TINY, env="CartPole-v1"):
    return jax.jit(make_trainer(config, make_env(env), objective).train)


def run(objective, meta=None, config=TINY, env="CartPole-v1", key=0):
    return trainer(objective, config, env)(jax.random.PRNGKey(key), objective.zero_meta() if meta is None else meta)


@pytest.fixture(scope="module")
def pqn_run():
    return run(PQN)


def assert_identical(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_same_key_same_result_metric_shapes_and_finite_losses(pqn_run):
    assert_identical(pqn_run, run(PQN))
    m = pqn_run.metrics
    for leaf in jax.tree.leaves(m):
        assert leaf.shape == (TINY.num_updates,)
    assert np.isfinite(m.losses["td_loss"]).all() and (m.losses["td_loss"] > 0).all()
    assert set(m.losses) == {"td_loss"} and set(m.diagnostics) == {"entropy"}  # no actor: no actor's numbers
    # epsilon decays 1.0 -> 0.2 over the first 20% of updates: entropy log(2) first, then that of eps = 0.2.
    np.testing.assert_allclose(m.diagnostics["entropy"][0], np.log(2), rtol=1e-6)
    np.testing.assert_allclose(m.diagnostics["entropy"][-1], epsilon_greedy_entropy(0.2, 2), rtol=1e-6)
    assert not np.array_equal(run(PQN, key=1).metrics.losses["td_loss"], m.losses["td_loss"])  # seeds differ


@pytest.mark.slow  # 18 s on 2 cores
def test_vmapped_seeds_equal_single_runs(pqn_run):
    train = make_trainer(TINY, make_env("CartPole-v1"), PQN).train
    keys = np.concatenate([np.asarray(jax.random.PRNGKey(0))[None], np.asarray(jax.random.PRNGKey(5))[None]])
    batched = jax.jit(jax.vmap(train, (0, None)))(keys, PQN.zero_meta())
    for a, b in zip(jax.tree.leaves(batched), jax.tree.leaves(pqn_run), strict=True):
        np.testing.assert_allclose(np.asarray(a)[0], np.asarray(b), rtol=2e-5, atol=2e-6)


def test_zero_meta_learned_td_loss_and_trace_give_pqn_exactly(pqn_run):
    """A learned value loss (the TD loss, a residual around L2) and a learned trace (a residual around Peng's
    lambda), both at zero meta-parameters: the training run is PQN's, bit for bit."""
    learned = replace(PQN, value_loss=VALUE_LOSSES.make("learned", hidden=(4,), progress=True),
                      trace=TRACES.make("learned", hidden=(4,)))
    assert_identical(run(learned), pqn_run)
    # ... and not by accident: away from zero the run differs.
    meta = jax.tree.map(lambda x: x + 0.3, learned.zero_meta())
    assert not np.array_equal(run(learned, meta).metrics.losses["td_loss"], pqn_run.metrics.losses["td_loss"])


@pytest.mark.slow  # 20 s on 2 cores
def test_zero_meta_learned_optimizer_gives_pqn_with_adam():
    """The learned optimiser is a residual around Adam (PQN's own is RAdam): at zero it is PQN with Adam, up to
    float rounding (XLA fuses Adam's update with the residual's 0 differently; as for PPO in
    test_objectives_training)."""
    adam = replace(PQN, optimizer=OPTIMIZERS.make("adam"))
    learned = replace(PQN, optimizer=OPTIMIZERS.make("learned", hidden=(4,)))
    for x, y in zip(jax.tree.leaves(run(learned)), jax.tree.leaves(run(adam)), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # 10 s on 2 cores
def test_truncation_is_counted_and_bootstrapped_episodes_logged():
    """MountainCar: a near-random policy never reaches the goal, so every episode is cut at 200 steps."""
    config = replace(TINY, num_steps=50, total_timesteps=4 * 50 * 8)
    m = run(PQN, config=config, env="MountainCar-v0").metrics
    assert int(np.sum(m.truncation_count)) == int(np.sum(m.episode_count)) == 8
    finished = np.asarray(m.episode_count) > 0
    np.testing.assert_array_equal(np.asarray(m.episode_return)[finished], -200.0)
    assert np.isnan(np.asarray(m.episode_return)[~finished]).all()
    assert np.isfinite(m.losses["td_loss"]).all()


def test_traces():
    greedy_next = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    progress = Progress(np.float32(0.5), np.float32(10))
    inputs = TraceInputs(np.float32(0.9), greedy_next)
    peng = TRACES.make("peng")(PQN.zero_meta()["trace"], inputs, progress)
    np.testing.assert_array_equal(peng, np.full((2, 2), 0.9, np.float32))
    np.testing.assert_array_equal(TRACES.make("watkins")({}, inputs, progress), 0.9 * greedy_next)
    learned = TRACES.make("learned")
    np.testing.assert_array_equal(learned(learned.zero_meta(), inputs, progress), peng)
    far = jax.tree.map(lambda x: x + 5.0 * np.sign(np.random.default_rng(0).normal(size=x.shape)),
                       learned.zero_meta())
    out = np.asarray(learned(far, inputs, progress))
    assert ((out >= 0) & (out <= 1)).all()  # clipped to [0, 1] whatever the meta-parameters


def test_epsilon_greedy_entropy():
    assert float(epsilon_greedy_entropy(0.0, 6)) == 0.0
    np.testing.assert_allclose(epsilon_greedy_entropy(1.0, 6), np.log(6), rtol=1e-6)


def test_objective_and_algorithm_must_agree():
    env = make_env("CartPole-v1")
    with pytest.raises(UserError, match="algorithm pqn needs a TD objective"):
        make_trainer(TINY, env, BUILTIN_OBJECTIVES["ppo"])
    with pytest.raises(UserError, match="--set algorithm=pqn"):
        make_trainer(get_preset("classic"), env, PQN)
    with pytest.raises(UserError, match="never calls the drift"):
        make_trainer(TINY, env, replace(PQN, drift=DRIFTS.make("lpo", hidden=4)))
    with pytest.raises(UserError, match="continuous actions"):
        make_trainer(TINY, make_env("Pendulum-v1"), PQN)


@pytest.mark.slow  # 18 s on 2 cores
def test_static_program_with_hyper_as_data_and_steps_give_the_same_run(pqn_run):
    """Issue 14 with PQN: the static config's program, with the config's hyperparameters passed as data, gives
    the config's own run, as does stepping the trainer in two pieces; another learning rate reuses the program."""
    from metadisco.trainers.hyper import hyper_of, static_of

    trainer = make_trainer(static_of(TINY), make_env("CartPole-v1"), PQN)
    traced = jax.jit(trainer.train)(jax.random.PRNGKey(0), PQN.zero_meta(), hyper_of(TINY))
    for a, b in zip(jax.tree.leaves(traced), jax.tree.leaves(pqn_run), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)
    half = trainer.num_updates // 2
    state = jax.jit(trainer.init)(jax.random.PRNGKey(0), PQN.zero_meta(), hyper_of(TINY))  # one compilation,
    # not one per operation
    state, first = jax.jit(trainer.step, static_argnums=1)(state, half)
    state, rest = jax.jit(trainer.step, static_argnums=1)(state, trainer.num_updates - half)
    np.testing.assert_allclose(np.concatenate([first.losses["td_loss"], rest.losses["td_loss"]]),
                               pqn_run.metrics.losses["td_loss"], rtol=2e-5, atol=2e-6)
    other = jax.jit(trainer.train)(jax.random.PRNGKey(0), PQN.zero_meta(), hyper_of(replace(TINY, lr=TINY.lr * 3)))
    assert not np.array_equal(other.metrics.losses["td_loss"], pqn_run.metrics.losses["td_loss"])
