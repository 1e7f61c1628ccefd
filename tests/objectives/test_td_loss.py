"""DQNReg and DQNClipped (Co-Reyes et al., ICLR 2021) as value-loss pieces: their formulas on many random inputs,
the gradients each case of DQNClipped gives, and each piece inside DQN's trainer."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco import BUILTIN_OBJECTIVES, get_preset, make_env
from metadisco.core.errors import UserError
from metadisco.objectives import VALUE_LOSSES, Progress, ValueLossInputs
from metadisco.objectives.td_loss import dqn_clipped_loss
from metadisco.trainers import make_trainer
from metadisco.trainers.config import apply_overrides

PROGRESS = Progress(jnp.float32(0.3), jnp.float32(10.0))


def random_inputs(seed, n=64):
    rng = np.random.default_rng(seed)
    q, old, next_value = (jnp.asarray(rng.normal(scale=3.0, size=n), jnp.float32) for _ in range(3))
    discount = jnp.asarray(0.99 * (rng.random(n) > 0.2), jnp.float32)
    reward = jnp.asarray(rng.normal(size=n), jnp.float32)
    return ValueLossInputs(q, old, reward + discount * next_value, next_value, discount)


@pytest.mark.parametrize("seed", range(20))
def test_dqn_reg_is_the_squared_td_error_plus_a_tenth_of_q(seed):
    inputs = random_inputs(seed)
    q, y = np.asarray(inputs.value, np.float64), np.asarray(inputs.target, np.float64)
    loss = VALUE_LOSSES.make("dqn_reg")({}, inputs, PROGRESS)
    np.testing.assert_allclose(loss, (q - y) ** 2 + 0.1 * q, rtol=1e-5, atol=1e-5)
    # weight 0 is the squared TD error, twice L2's 0.5 delta^2
    plain = VALUE_LOSSES.make("dqn_reg", weight=0.0)({}, inputs, PROGRESS)
    np.testing.assert_allclose(plain, 2 * VALUE_LOSSES.make("l2")({}, inputs, PROGRESS), rtol=1e-6)
    # its gradient in Q is DQN's 2 delta plus the constant 0.1: it always pushes Q down beside the TD error
    grad = jax.grad(lambda v: jnp.sum(VALUE_LOSSES.make("dqn_reg")({}, inputs._replace(value=v), PROGRESS)))(
        inputs.value)
    np.testing.assert_allclose(grad, 2 * (q - y) + 0.1, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(20))
def test_dqn_clipped_is_the_papers_formula_and_its_four_cases(seed):
    inputs = random_inputs(seed)
    q, y = np.asarray(inputs.value, np.float64), np.asarray(inputs.target, np.float64)
    nv, d = np.asarray(inputs.next_value, np.float64), np.asarray(inputs.discount, np.float64)
    delta = q - y
    loss = VALUE_LOSSES.make("dqn_clipped")({}, inputs, PROGRESS)
    np.testing.assert_allclose(loss, np.maximum(q, delta ** 2 + y) + np.maximum(delta, d * nv ** 2),
                               rtol=1e-5, atol=1e-4)
    # d/dQ: the first max gives 1 where Q wins (the regularising case) else 2 delta (DQN's); the second gives 1
    # where Q - Y wins else 0 (the target network's term has no gradient)
    grad = jax.grad(lambda v: jnp.sum(dqn_clipped_loss(v, inputs.target, inputs.next_value, inputs.discount)))(
        inputs.value)
    first = np.where(q > delta ** 2 + y, 1.0, 2 * delta)
    second = np.where(delta > d * nv ** 2, 1.0, 0.0)
    np.testing.assert_allclose(grad, first + second, rtol=1e-4, atol=1e-4)


def test_dqn_clipped_needs_the_target_parts_that_only_dqn_gives():
    inputs = random_inputs(0)._replace(next_value=None, discount=None)
    with pytest.raises(UserError, match="only algorithm dqn's trainer gives"):
        VALUE_LOSSES.make("dqn_clipped")({}, inputs, PROGRESS)


@pytest.mark.parametrize("kind", ["dqn_reg", "dqn_clipped"])
def test_each_published_loss_trains_inside_dqn(kind):
    objective = replace(BUILTIN_OBJECTIVES["dqn"], value_loss=VALUE_LOSSES.make(kind))
    config = apply_overrides(replace(get_preset("dqn_classic"), total_timesteps=240, num_envs=4, num_steps=2,
                                     hidden_sizes=(8,)),
                             {"buffer_size": 64, "buffer_batch": 8, "learning_starts": 16})
    result = jax.jit(make_trainer(config, make_env("CartPole-v1"), objective).train)(
        jax.random.PRNGKey(0), objective.zero_meta())
    loss = np.asarray(result.metrics.losses["td_loss"])
    assert np.isfinite(loss).all() and np.any(loss != 0)


# -- the learnable TD loss ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(16))
def test_learned_td_loss_at_zero_is_dqns_loss_bit_for_bit_in_value_and_gradient(seed):
    piece = VALUE_LOSSES.make("learned_td", hidden=(8, 8), progress=bool(seed % 2),
                              input=("symlog", "raw")[seed % 3 > 1])
    inputs = random_inputs(seed)
    l2 = VALUE_LOSSES.make("l2")

    def total(q, p, meta):
        return jnp.sum(p(meta, inputs._replace(value=q), PROGRESS))

    np.testing.assert_array_equal(piece(piece.zero_meta(), inputs, PROGRESS), l2({}, inputs, PROGRESS))
    np.testing.assert_array_equal(jax.grad(total)(inputs.value, piece, piece.zero_meta()),
                                  jax.grad(total)(inputs.value, l2, {}))
    # Away from zero it reads every part of the target: moving next_value alone moves the loss.
    moved = jax.tree.map(lambda x: x + 0.2, piece.start_meta(jax.random.PRNGKey(seed), 1.0))
    base = piece(moved, inputs, PROGRESS)
    assert np.all(np.isfinite(base))
    shifted = piece(moved, inputs._replace(next_value=inputs.next_value + 1.0), PROGRESS)
    assert not np.array_equal(np.asarray(base), np.asarray(shifted))


def test_learned_td_loss_needs_the_targets_parts_and_a_known_input():
    piece = VALUE_LOSSES.make("learned_td")
    inputs = random_inputs(0)._replace(next_value=None, discount=None)
    with pytest.raises(UserError, match="learned_td reads the TD target's bootstrap value"):
        piece(piece.zero_meta(), inputs, PROGRESS)
    with pytest.raises(UserError, match="unknown learned_td input 'logit'"):
        VALUE_LOSSES.make("learned_td", input="logit")


@pytest.mark.parametrize("kind, options, expected", [
    ("l2", {}, (0.5, 0.0, 0.0)),  # DQN's
    ("dqn_reg", {}, (1.0, 0.1, 0.0)),  # DQNReg's
    ("dqn_reg", {"weight": 0.37}, (1.0, 0.37, 0.0)),
])
def test_the_closed_form_fit_recovers_dqns_and_dqnregs_losses(kind, options, expected):
    from metadisco.objectives.learned_td_loss import td_loss_closed_form

    fit = td_loss_closed_form(VALUE_LOSSES.make(kind, **options), {}, PROGRESS)
    np.testing.assert_allclose([fit["a"], fit["b"], fit["c"]], expected, atol=1e-4)
    assert fit["r2"] > 1 - 1e-6


def test_the_closed_form_of_a_learned_residual_explains_at_most_all_of_it():
    from metadisco.objectives.learned_td_loss import td_loss_closed_form

    piece = VALUE_LOSSES.make("learned_td", hidden=(8,))
    meta = jax.tree.map(lambda x: x + 0.5, piece.start_meta(jax.random.PRNGKey(3), 1.0))
    fit = td_loss_closed_form(piece, meta, PROGRESS)
    assert 0.0 <= fit["r2"] <= 1.0 + 1e-6 and fit["a"] > 0
