"""Learned value loss and learned optimiser, piece by piece: zero meta-parameters are L2 / Adam exactly, non-zero
ones change them, and bad options are UserErrors. (Whole training runs: objectives/test_training.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from metadisco.core.errors import UserError
from metadisco.objectives import OPTIMIZERS, VALUE_LOSSES, OptimizerInputs, Progress, ValueLossInputs
from metadisco.objectives.value_loss import l2_value_loss

P0 = Progress(jnp.float32(0.0), jnp.float32(100.0))  # the optimiser is built before the first update

def random_like(tree, seed, scale):
    leaves, treedef = jax.tree.flatten(tree)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    return jax.tree.unflatten(treedef, [scale * jax.random.normal(k, x.shape)
                                        for k, x in zip(keys, leaves, strict=True)])


@pytest.mark.parametrize("progress", [False, True])
def test_learned_value_loss_is_l2_at_zero_and_differs_elsewhere(progress):
    loss = VALUE_LOSSES.make("learned", progress=progress)
    value, target = jax.random.normal(jax.random.PRNGKey(0), (2, 64)) * 5.0
    p = Progress(jnp.float32(0.25), jnp.float32(50.0))
    fn = lambda meta, v: loss(meta, ValueLossInputs(v, v, target), p)
    zero = loss.zero_meta()
    assert np.array_equal(fn(zero, value), l2_value_loss(value, target))
    grad_zero = jax.grad(lambda v: fn(zero, v).sum())(value)
    assert np.array_equal(grad_zero, jax.grad(lambda v: l2_value_loss(v, target).sum())(value))
    meta = random_like(zero, 1, 0.1)
    assert fn(meta, value).shape == (64,)
    assert not np.allclose(fn(meta, value), l2_value_loss(value, target))
    if progress:
        later = loss(meta, ValueLossInputs(value, value, target), Progress(jnp.float32(0.9), jnp.float32(50.0)))
        assert not np.allclose(fn(meta, value), later)


@pytest.mark.parametrize("form", ["add", "scale"])
@pytest.mark.parametrize("input_", ["raw", "symlog"])
def test_learned_value_loss_forms_are_l2_at_zero_for_random_inputs(form, input_):
    """Every form and input is L2 exactly at zero meta-parameters (values and gradients, 20 random batches of
    errors up to 1e3), and a random meta-parameter point changes both."""
    loss = VALUE_LOSSES.make("learned", form=form, input=input_, hidden=[16, 16])
    zero, meta = loss.zero_meta(), random_like(loss.zero_meta(), 3, 0.5)
    for seed in range(20):
        k1, k2, k3 = jax.random.split(jax.random.PRNGKey(seed), 3)
        scale = 10.0 ** jax.random.uniform(k3, (), minval=-2, maxval=3)
        value, target = scale * jax.random.normal(k1, (2, 32))
        p = Progress(jax.random.uniform(k2, ()), jnp.float32(50.0))
        fn = lambda m, v, target=target, p=p: loss(m, ValueLossInputs(v, v, target), p)
        l2_grad = jax.grad(lambda v, target=target: l2_value_loss(v, target).sum())(value)
        assert np.array_equal(fn(zero, value), l2_value_loss(value, target))
        assert np.array_equal(jax.grad(lambda v, fn=fn: fn(zero, v).sum())(value), l2_grad)
        assert not np.allclose(fn(meta, value), l2_value_loss(value, target))
        assert np.all(np.isfinite(jax.grad(lambda v, fn=fn: fn(meta, v).sum())(value)))


def test_scaled_learned_value_loss_reshapes_large_errors():
    """`form: scale` multiplies L2 by exp(net) (so it stays >= 0 and 0 at zero error); `add` cannot move the
    slope of a large error, whose tanh units saturate: the reason the scaled form exists."""
    error = jnp.array([-200.0, -50.0, -1.0, 0.0, 1.0, 50.0, 200.0])
    for form in ("add", "scale"):
        loss = VALUE_LOSSES.make("learned", form=form, input="raw", hidden=[8])
        meta = random_like(loss.zero_meta(), 4, 1.0)
        slope = jax.grad(lambda e, loss=loss, meta=meta: loss(meta, ValueLossInputs(e, e, 0.0 * e), P0).sum())(error)
        values = loss(meta, ValueLossInputs(error, error, 0.0 * error), P0)
        if form == "scale":
            assert np.all(values >= 0) and values[3] == 0
            ratio = np.asarray(slope / error)[[0, 6]]
            assert np.all(np.abs(ratio - 1.0) > 1e-3)  # the far slopes are not L2's
        else:
            np.testing.assert_allclose(np.asarray(slope)[[0, 6]], np.asarray(error)[[0, 6]], rtol=1e-5)


def test_asymmetric_l2_weights_over_and_underestimates():
    """L2 at over = under = 1; otherwise each side's squared error times its weight, for random errors."""
    value, target = jax.random.normal(jax.random.PRNGKey(5), (2, 256)) * 30.0
    inputs = ValueLossInputs(value, value, target)
    assert np.array_equal(VALUE_LOSSES.make("asymmetric_l2")({}, inputs, P0), l2_value_loss(value, target))
    loss = VALUE_LOSSES.make("asymmetric_l2", over=7.0, under=0.25)({}, inputs, P0)
    weight = np.where(np.asarray(value - target) > 0, 7.0, 0.25)
    np.testing.assert_allclose(loss, weight * l2_value_loss(value, target), rtol=1e-6)
    with pytest.raises(UserError, match="over"):
        VALUE_LOSSES.make("asymmetric_l2", over=0.0)


def test_learned_value_loss_bad_form_or_input():
    with pytest.raises(UserError, match="form"):
        VALUE_LOSSES.make("learned", form="mul")
    with pytest.raises(UserError, match="input"):
        VALUE_LOSSES.make("learned", input="log")


def test_learned_value_loss_sizes():
    assert VALUE_LOSSES.make("learned").zero_meta()["dense_0"]["kernel"].shape == (1, 64)
    meta = VALUE_LOSSES.make("learned", hidden=[8], progress=True).zero_meta()
    assert meta["dense_0"]["kernel"].shape == (2, 8) and meta["dense_1"]["kernel"].shape == (8, 1)
    with pytest.raises(UserError, match="hidden"):
        VALUE_LOSSES.make("learned", hidden=(0,))


def _run_optimizer(tx, params, steps=5):
    state = tx.init(params)
    out = []
    for i in range(steps):
        grads = random_like(params, 10 + i, 3.0)  # large enough for the global-norm clip to act
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        out.append(updates)
    return params, out


def test_learned_optimizer_is_adam_at_zero_meta():
    params = {"dense": {"kernel": jnp.ones((3, 4)), "bias": jnp.zeros(4)}, "log_std": jnp.zeros(2)}
    schedule = lambda count: 1e-2 * (1.0 - count / 100.0)
    learned = OPTIMIZERS.make("learned")
    adam = OPTIMIZERS.make("adam")
    for lr in (schedule, 3e-3):
        final_l, updates_l = _run_optimizer(learned(learned.zero_meta(), OptimizerInputs(lr, 0.5, 100), P0), params)
        final_a, updates_a = _run_optimizer(adam({}, OptimizerInputs(lr, 0.5, 100), P0), params)
        for x, y in zip(jax.tree.leaves((final_l, updates_l)), jax.tree.leaves((final_a, updates_a)), strict=True):
            assert np.array_equal(x, y)


def test_learned_optimizer_with_meta_changes_updates_and_sees_progress():
    learned = OPTIMIZERS.make("learned", hidden=(8,), betas=(0.9, 0.99))
    assert learned.num_features == 8
    meta = random_like(learned.zero_meta(), 0, 0.3)
    params = {"w": jnp.linspace(-1.0, 1.0, 6)}
    grads = {"w": jnp.linspace(0.1, 0.6, 6)}
    tx = learned(meta, OptimizerInputs(1e-2, 0.5, 10), P0)
    adam_tx = OPTIMIZERS.make("adam")({}, OptimizerInputs(1e-2, 0.5, 10), P0)
    u_learned, _ = tx.update(grads, tx.init(params), params)
    u_adam, _ = adam_tx.update(grads, adam_tx.init(params), params)
    assert not np.allclose(u_learned["w"], u_adam["w"])
    # Same gradients at a later step (training fraction 0.9) give a different correction.
    clip_state, state = tx.init(params)  # optax.chain(clip_by_global_norm, the learned correction)
    late_state = (clip_state, state._replace(count=jnp.int32(9)))
    u_late, _ = tx.update(grads, late_state, params)
    assert not np.allclose(u_late["w"], u_learned["w"])


def test_learned_optimizer_options():
    with pytest.raises(UserError, match="betas"):
        OPTIMIZERS.make("learned", betas=(0.9, 1.5))
    assert OPTIMIZERS.make("learned", betas=[0.5]).betas == (0.5,)


# The learned optimiser's parameters after 8 steps of `_pinned_run`, recorded (float32, printed in full) from
# the implementation before it used ravel_pytree and optax.chain (issue 46.3); that rewrite, and any later one,
# must keep them. Bit-identical on the recording machine (sha256 of the bytes, checked there); the tolerance is
# for other CPUs, whose matmul blocking may differ in the last bit, and far below any change in the maths.
PINNED = {
    "dense": {"bias": [-0.021384386345744133, -0.05432941019535065, -0.04120662808418274, -0.028186790645122528],
              "kernel": [-1.0173087120056152, -0.7729112505912781, -0.7181276679039001, -0.5240713953971863,
                         -0.36866262555122375, -0.1160755604505539, 0.06483171880245209, 0.20208658277988434,
                         0.46791091561317444, 0.6122324466705322, 0.8816668391227722, 0.9889044165611267]},
    "log_std": [-0.5209265351295471, -0.4596658945083618],
    "scalar": [0.2989112138748169],
}


def _pinned_run(optimizer):
    """8 jitted steps from a tree of leaves of several shapes (a scalar among them), a decaying learning rate
    and clipped gradients."""
    params = {"dense": {"kernel": jnp.linspace(-1, 1, 12).reshape(3, 4), "bias": jnp.zeros(4)},
              "log_std": jnp.full((2,), -0.5), "scalar": jnp.float32(0.3)}
    schedule = lambda count: 1e-2 * (1.0 - count / 100.0)
    meta = random_like(optimizer.zero_meta(), 0, 0.3) if optimizer.learnable else {}
    tx = optimizer(meta, OptimizerInputs(schedule, 0.5, 100), P0)
    state, step = tx.init(params), jax.jit(tx.update)
    for i in range(8):
        updates, state = step(random_like(params, 10 + i, 3.0), state, params)
        params = optax.apply_updates(params, updates)
    return params


def test_learned_optimizer_trains_to_its_recorded_parameters():
    learned = _pinned_run(OPTIMIZERS.make("learned"))
    adam = _pinned_run(OPTIMIZERS.make("adam"))
    for path, x in jax.tree_util.tree_flatten_with_path(learned)[0]:
        pinned = PINNED
        for key in path:
            pinned = pinned[key.key]
        np.testing.assert_allclose(np.ravel(x), np.float32(pinned), rtol=1e-6, atol=1e-7, err_msg=str(path))
    # The pin is of the learned correction, not of Adam's part alone.
    assert not all(np.allclose(x, y, atol=1e-4) for x, y in zip(jax.tree.leaves(learned), jax.tree.leaves(adam),
                                                                  strict=True))
