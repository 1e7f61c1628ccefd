"""LPO and TA-LPO drifts: the three mirror-learning conditions for any meta-parameters (Kuba et al., ICML 2022;
Lu et al., NeurIPS 2022; Jackson, Lu et al., ICLR 2024)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.objectives import DRIFTS, DriftInputs, Progress
from metadisco.objectives.drift import ppo_drift

SCALES = (0.03, 0.3, 3.0, 30.0)  # ES-sized perturbations up to saturated networks
NUM_META = 16  # random meta-parameter draws per scale


def random_meta(drift, key, scale):
    leaves, tree = jax.tree.flatten(drift.zero_meta())
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(tree, [scale * jax.random.normal(k, x.shape) for k, x in zip(keys, leaves, strict=True)])


def random_inputs(key, n=512):
    """Ratios log-uniform on [e^-2, e^2] (with some near 1), normalised-like advantages, progress in [0, 1)."""
    k1, k2, k3, k4 = jax.random.split(key, 4)
    log_r = jnp.concatenate([jax.random.uniform(k1, (n,), minval=-2.0, maxval=2.0),
                             jax.random.uniform(k2, (n,), minval=-1e-3, maxval=1e-3)])
    adv = 3.0 * jax.random.normal(k3, (2 * n,))
    fraction, horizon = jax.random.uniform(k4, (2,))
    return jnp.exp(log_r), adv, Progress(fraction, jnp.float32(10.0 + 5000.0 * horizon))


DRIFT_SPECS = [("lpo", {}), ("lpo", {"hidden": 16}), ("talpo", {}), ("talpo", {"hidden": 32, "horizon": False}),
               ("lpo", {"hidden": 16, "floor": 0.5}), ("talpo", {"hidden": 16, "floor": 1.0})]


def assert_drift_conditions(drift, seed_of_scale, num_meta=NUM_META):
    """The three mirror-learning conditions of `drift` (>= 0 everywhere, exactly 0 with slope exactly 0 at r = 1,
    and finite) for `num_meta` random meta-parameter draws at each of SCALES, the draws of scale i from the key
    `seed_of_scale(i)`; random ratios, advantages and progress (`random_inputs`)."""

    @jax.jit
    def check(key, scale):
        meta_key, input_key = jax.random.split(key)
        meta = random_meta(drift, meta_key, scale)
        ratio, adv, progress = random_inputs(input_key)
        values = drift(meta, DriftInputs(ratio, adv), progress)
        at_one = drift(meta, DriftInputs(jnp.ones_like(adv), adv), progress)
        slope = jax.vmap(jax.grad(lambda r, a: drift(meta, DriftInputs(r, a), progress)))(jnp.ones_like(adv), adv)
        return values.min(), jnp.abs(at_one).max(), jnp.abs(slope).max(), jnp.isfinite(values).all()

    for i, scale in enumerate(SCALES):
        for key in jax.random.split(jax.random.PRNGKey(seed_of_scale(i)), num_meta):
            low, at_one, slope, finite = check(key, scale)
            assert bool(finite), (drift.name, scale)
            assert float(low) >= 0.0, (drift.name, scale)
            assert float(at_one) == 0.0, (drift.name, scale)
            assert float(slope) == 0.0, (drift.name, scale)


@pytest.mark.parametrize("kind,options", DRIFT_SPECS)
def test_drift_conditions_for_random_meta(kind, options):
    spec = DRIFT_SPECS.index((kind, options))
    assert_drift_conditions(DRIFTS.make(kind, **options), lambda i: 100 * spec + i)


@pytest.mark.parametrize("kind", ["lpo", "talpo"])
def test_zero_meta_is_ppo_with_identical_gradients(kind):
    drift = DRIFTS.make(kind)
    ratio, adv, progress = random_inputs(jax.random.PRNGKey(1))
    meta = drift.zero_meta()
    np.testing.assert_allclose(drift(meta, DriftInputs(ratio, adv), progress), ppo_drift(ratio, adv), rtol=1e-6,
                               atol=1e-7)
    grad_lpo = jax.grad(lambda r: drift(meta, DriftInputs(r, adv), progress).sum())(ratio)
    grad_ppo = jax.grad(lambda r: ppo_drift(r, adv).sum())(ratio)
    assert np.array_equal(np.asarray(grad_lpo), np.asarray(grad_ppo))
    assert float(jnp.mean(ppo_drift(ratio, adv) > 0)) > 0.2  # the comparison covers the clipped region


def test_nonzero_meta_changes_the_drift_and_talpo_sees_progress():
    drift = DRIFTS.make("talpo", hidden=16)
    meta = random_meta(drift, jax.random.PRNGKey(0), 1.0)
    ratio, adv, _ = random_inputs(jax.random.PRNGKey(2))
    early = drift(meta, DriftInputs(ratio, adv), Progress(jnp.float32(0.0), jnp.float32(100.0)))
    late = drift(meta, DriftInputs(ratio, adv), Progress(jnp.float32(0.9), jnp.float32(100.0)))
    assert not np.allclose(early, late)
    assert not np.allclose(early, ppo_drift(ratio, adv))


def test_sizes_and_batch_shapes():
    lpo = DRIFTS.make("lpo")
    assert sum(x.size for x in jax.tree.leaves(lpo.zero_meta())) == 8 * 128 + 128  # about 1,150 (Lu et al. 2022)
    assert DRIFTS.make("talpo").zero_meta()["w1"].shape == (24, 128)
    assert DRIFTS.make("talpo", horizon=False).zero_meta()["w1"].shape == (16, 128)
    ratio = jnp.full((3, 5), 1.3)
    out = lpo(random_meta(lpo, jax.random.PRNGKey(0), 0.1), DriftInputs(ratio, jnp.ones((3, 5))), Progress(0.5, 10.0))
    assert out.shape == (3, 5)
    assert lpo.learnable and not DRIFTS.make("ppo").learnable


def test_bad_options_are_user_errors():
    with pytest.raises(UserError, match="hidden"):
        DRIFTS.make("lpo", hidden=0)
    with pytest.raises(UserError, match="no option"):
        DRIFTS.make("talpo", width=3)
    with pytest.raises(UserError, match="floor must be >= 0"):
        DRIFTS.make("talpo", floor=-0.1)
    with pytest.raises(UserError, match="floor must be a finite number"):
        DRIFTS.make("talpo", floor=float("nan"))


@pytest.mark.parametrize("kind", ["lpo", "talpo"])
def test_the_floor_keeps_that_share_of_ppos_drift_and_changes_nothing_above_it(kind):
    """floor = f: drift_f = max(drift, f ppo) for random meta-parameters and inputs, so it is >= f ppo everywhere
    and equals the unfloored drift wherever that is already above, for either kind (module docstring)."""
    free, floored = DRIFTS.make(kind, hidden=16), DRIFTS.make(kind, hidden=16, floor=0.5)
    assert floored.zero_meta()["w1"].shape == free.zero_meta()["w1"].shape
    for seed in range(16):
        meta_key, input_key = jax.random.split(jax.random.PRNGKey(seed))
        meta = random_meta(free, meta_key, 3.0)
        ratio, adv, progress = random_inputs(input_key)
        inputs, ppo = DriftInputs(ratio, adv), ppo_drift(ratio, adv)
        base, kept = free(meta, inputs, progress), floored(meta, inputs, progress)
        np.testing.assert_array_equal(np.asarray(kept), np.asarray(jnp.maximum(base, 0.5 * ppo)))
        assert bool(jnp.all(kept >= 0.5 * ppo))


def test_floor_zero_is_the_papers_drift_bit_for_bit():
    drift, zero = DRIFTS.make("talpo", hidden=16), DRIFTS.make("talpo", hidden=16, floor=0.0)
    meta = random_meta(drift, jax.random.PRNGKey(3), 3.0)
    ratio, adv, progress = random_inputs(jax.random.PRNGKey(4))
    assert np.array_equal(np.asarray(drift(meta, DriftInputs(ratio, adv), progress)),
                          np.asarray(zero(meta, DriftInputs(ratio, adv), progress)))


@pytest.mark.parametrize("kind", ["lpo", "talpo"])
def test_a_spec_from_before_the_floor_reads_at_floor_zero_and_every_floor_round_trips(kind):
    """`floor` came after objective files were published: a spec without it reads at 0, and the migration of stored
    plans (`runs.migrate.upgrade_spec`) makes it equal to the spec written now; each floor is written and reads back."""
    from metadisco.objectives import Objective
    from metadisco.runs.migrate import upgrade_spec

    for floor in (0.0, 0.5, 1.0):
        objective = Objective(drift=DRIFTS.make(kind, hidden=16, floor=floor))
        spec = objective.to_spec()
        assert spec["drift"]["floor"] == floor and Objective.from_spec(spec) == objective
    written = Objective(drift=DRIFTS.make(kind, hidden=16)).to_spec()
    before = {**written, "drift": {k: v for k, v in written["drift"].items() if k != "floor"}}
    assert Objective.from_spec(before).drift.floor == 0.0 and upgrade_spec(before) == written


def test_talpo_without_horizon_reads_the_run_length_only_through_progress():
    """horizon: false drops the log N features: at equal n / N, any N gives the same drift (random meta-parameters,
    inputs and run lengths); with them, N changes it. `sees_horizon` says which (`metadisco.meta.horizon`)."""
    short, full = DRIFTS.make("talpo", hidden=16, horizon=False), DRIFTS.make("talpo", hidden=16)
    assert not short.sees_horizon and full.sees_horizon and not DRIFTS.make("lpo").sees_horizon
    for seed in range(8):
        keys = jax.random.split(jax.random.PRNGKey(seed), 5)
        ratio = jnp.exp(jax.random.uniform(keys[0], (64,), minval=-1.0, maxval=1.0))
        inputs = DriftInputs(ratio, jax.random.normal(keys[1], (64,)))
        fraction = jax.random.uniform(keys[2])
        n1, n2 = jax.random.randint(keys[3], (2,), 2, 5000).astype(jnp.float32)
        meta = random_meta(short, keys[4], 0.5)
        at_1, at_2 = Progress(fraction, n1), Progress(fraction, n2)
        assert jnp.array_equal(short(meta, inputs, at_1), short(meta, inputs, at_2))
        meta = random_meta(full, keys[4], 0.5)
        if n1 != n2:
            assert not jnp.allclose(full(meta, inputs, at_1), full(meta, inputs, at_2))
