"""The learned DPO drift (four numbers): a valid drift for any meta-parameters, DPO at zero, annealed by progress."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_lpo import assert_drift_conditions, random_inputs

from metadisco.core.errors import UserError
from metadisco.objectives import BUILTIN_OBJECTIVES, DRIFTS, VALUE_LOSSES, DriftInputs, Objective, Progress
from metadisco.objectives.drift import dpo_drift

NUM_META = 32  # random meta-parameter draws per scale


@pytest.mark.parametrize("progress", [True, False])
def test_drift_conditions_for_random_meta(progress):
    """>= 0 everywhere, exactly 0 with slope exactly 0 at r = 1, finite: for meta-parameters from ES-sized to far
    past the log-scale clip (scale 30), random ratios, advantages and progress."""
    assert_drift_conditions(DRIFTS.make("learned_dpo", progress=progress), lambda i: 10 * i + progress,
                            num_meta=NUM_META)


def test_zero_meta_is_dpo():
    drift = DRIFTS.make("learned_dpo")

    def learned(ratio, adv, at):
        return drift(drift.zero_meta(), DriftInputs(ratio, adv), at).sum()

    def dpo(ratio, adv, at):
        return dpo_drift(ratio, adv).sum()

    for seed in range(8):
        inputs = random_inputs(jax.random.PRNGKey(seed))
        ratio, adv, at = inputs
        np.testing.assert_allclose(drift(drift.zero_meta(), DriftInputs(ratio, adv), at), dpo_drift(ratio, adv),
                                   rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(jax.grad(learned)(*inputs), jax.grad(dpo)(*inputs), rtol=1e-6, atol=1e-6)
        assert float(jnp.mean(dpo_drift(ratio, adv) > 1e-3)) > 0.2  # the comparison covers where DPO pulls back


def test_meta_parameters_are_log_scales_annealed_over_progress():
    """a0 multiplies alpha by e^a0 for the whole run; a1 moves it from e^(-a1 / 2) at the start to e^(a1 / 2) at the
    end; beta likewise; the drift equals DPO's closed form at those scales."""
    drift = DRIFTS.make("learned_dpo", alpha=1.5, beta=0.5)
    meta = {"log_alpha": jnp.array([0.3, -0.8]), "log_beta": jnp.array([-0.2, 1.0])}
    for fraction in (0.0, 0.25, 0.5, 0.99):
        at = Progress(jnp.float32(fraction), jnp.float32(100.0))
        alpha, beta = drift.scales(meta, at)
        np.testing.assert_allclose(alpha, 1.5 * np.exp(0.3 - 0.8 * (fraction - 0.5)), rtol=1e-6)
        np.testing.assert_allclose(beta, 0.5 * np.exp(-0.2 + 1.0 * (fraction - 0.5)), rtol=1e-6)
        ratio, adv, _ = random_inputs(jax.random.PRNGKey(3))
        np.testing.assert_allclose(drift(meta, DriftInputs(ratio, adv), at), dpo_drift(ratio, adv, alpha, beta),
                                   rtol=1e-6, atol=1e-7)
    still = DRIFTS.make("learned_dpo", progress=False)
    assert [x.shape for x in jax.tree.leaves(still.zero_meta())] == [(1,), (1,)]
    assert sum(x.size for x in jax.tree.leaves(drift.zero_meta())) == 4 and drift.learnable
    early, late = (still.scales({"log_alpha": jnp.array([0.4]), "log_beta": jnp.array([0.0])},
                                Progress(jnp.float32(f), jnp.float32(10.0)))[0] for f in (0.0, 0.9))
    assert float(early) == float(late) == pytest.approx(2.0 * np.exp(0.4))


def test_bad_options_are_user_errors():
    with pytest.raises(UserError, match="alpha"):
        DRIFTS.make("learned_dpo", alpha=0.0)
    with pytest.raises(UserError, match="no option"):
        DRIFTS.make("learned_dpo", hidden=3)


def test_the_baseline_paired_fitness_is_relative_to_is_named_by_the_objective():
    """Paired fitness pairs members with the objective at zero meta-parameters; meta-training and the probe name
    it: DPO for a learned DPO drift, PPO for LPO / TA-LPO and learned value losses, PQN for a TD objective."""
    from metadisco.trainers.algorithm import baseline_of, describe_baseline

    assert baseline_of(Objective(drift=DRIFTS.make("learned_dpo"))) == "DPO"
    assert baseline_of(Objective(drift=DRIFTS.make("talpo"), value_loss=VALUE_LOSSES.make("learned"))) == "PPO"
    assert baseline_of(Objective(drift=DRIFTS.make("dpo"), value_loss=VALUE_LOSSES.make("learned"))) == "DPO"
    assert describe_baseline(Objective(value_loss=VALUE_LOSSES.make("learned"))) == "PPO with an L2 value loss"
    assert describe_baseline(Objective(drift=DRIFTS.make("lpo"))) == "PPO"
    assert [baseline_of(BUILTIN_OBJECTIVES[name]) for name in ("ppo", "dpo", "pqn", "dqn", "actor_critic")] == \
        ["PPO", "DPO", "PQN", "DQN", "actor-critic"]
