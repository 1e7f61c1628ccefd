"""Expression drifts: DPO's and PPO's formulas are accepted and match the built-ins; invalid drifts and unsafe or
malformed text are refused with one-line UserErrors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.objectives import (
    DRIFTS,
    DriftInputs,
    Objective,
    Progress,
    expression_drift,
    load_objective,
    save_objective,
)
from metadisco.objectives.drift import dpo_drift, ppo_drift
from metadisco.objectives.expression import DPO_EXPRESSION, PPO_EXPRESSION

RATIO, ADV = jnp.meshgrid(jnp.exp(jnp.linspace(-2.0, 2.0, 81)), jnp.linspace(-8.0, 8.0, 41))
PROGRESS = Progress(jnp.float32(0.5), jnp.float32(100.0))


def test_ppo_and_dpo_formulas_match_the_builtin_drifts():
    ppo = expression_drift(*PPO_EXPRESSION)
    dpo = expression_drift(*DPO_EXPRESSION)
    np.testing.assert_allclose(ppo(None, DriftInputs(RATIO, ADV), PROGRESS), ppo_drift(RATIO, ADV), atol=1e-6)
    np.testing.assert_allclose(dpo(None, DriftInputs(RATIO, ADV), PROGRESS), dpo_drift(RATIO, ADV), rtol=1e-5,
                               atol=1e-5)
    grad = jax.grad(lambda r: dpo(None, DriftInputs(r, ADV), PROGRESS).sum())(RATIO)
    np.testing.assert_allclose(grad, jax.grad(lambda r: dpo_drift(r, ADV).sum())(RATIO), rtol=1e-4, atol=1e-4)


def test_alternative_spellings_of_dpo():
    (text, constants) = DPO_EXPRESSION
    reference = expression_drift(text, constants)(None, DriftInputs(RATIO, ADV), PROGRESS)
    pos = "relu((r - 1)*A - alpha*tanh((r - 1)*A/alpha))"
    neg = "max(0, log(r)*A - beta*tanh(log(r)*A/beta))"
    for spelled in (f"{pos} if A >= 0 else {neg}", f"Piecewise(({pos}, A >= 0), ({neg}, True))",
                    str(expression_drift(text, constants).sympy)):
        out = expression_drift(spelled, dict(constants))(None, DriftInputs(RATIO, ADV), PROGRESS)
        np.testing.assert_allclose(out, reference, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("text,message", [
    ("r*A", "is not 0 at r = 1: drift(1, A) = A"),
    ("A*(r - 1)**2 + 0.1", "is not 0 at r = 1"),
    ("(r - 1)*A", "non-zero slope at r = 1: d drift / d r (1, A) = A"),
    ("relu((r - 1)*A)", "non-zero slope"),  # a kink at r = 1: right slope A, left slope 0
    ("abs(r - 1)", "non-zero slope"),
    ("1/(r - 1)", "is not 0 at r = 1"),
])
def test_invalid_drifts_are_refused(text, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        expression_drift(text)


@pytest.mark.parametrize("text,message", [
    ("__import__('os')", "unknown function '__import__'"),
    ("__import__('os').system('true')", "only calls of the listed functions"),
    ("r.__class__", "Attribute is not allowed"),
    ("(lambda: 1)()", "only calls of the listed functions"),
    ("[r, A]", "List is not allowed"),
    ("'r'", "is not a number"),
    ("alpah * (r - 1)**2", "unknown name 'alpah'"),
    ("tanh(r, A)", "tanh takes 1 argument"),
    ("r if A", "syntax error"),
    ("A >= 0", "a condition, not a number"),
    ("", "non-empty"),
])
def test_unsafe_or_malformed_text_is_refused(text, message):
    with pytest.raises(UserError, match=message) as info:
        expression_drift(text, {"alpha": 2.0})
    assert "\n" not in str(info.value)


def test_constants_are_checked_and_normalised():
    with pytest.raises(UserError, match="bad constant name"):
        expression_drift("c*(r-1)**2", {"r": 1.0})
    with pytest.raises(UserError, match="must be a number"):
        expression_drift("c*(r-1)**2", {"c": "x"})
    a = DRIFTS.make("expression", expression="c*(r-1)**2*A", constants=[["c", 2]])
    b = expression_drift("c*(r-1)**2*A", {"c": 2.0})
    assert a == b and hash(a) == hash(b) and a.constants == (("c", 2.0),)


def test_expression_objective_file_round_trip(tmp_path):
    objective = Objective(drift=expression_drift(*DPO_EXPRESSION))
    loaded, meta = load_objective(save_objective(tmp_path / "dpo.msgpack", objective, objective.zero_meta()))
    assert loaded == objective
    assert np.array_equal(loaded.drift(meta["drift"], DriftInputs(RATIO, ADV), PROGRESS),
                          objective.drift({}, DriftInputs(RATIO, ADV), PROGRESS))


@pytest.mark.parametrize("alpha", [1e-3, 1e-2, 0.1, 2.0])
def test_sharp_but_flat_dpo_forms_are_valid(alpha):
    # x - a tanh(x / a) has zero slope at x = 0 for every a > 0; a small a only makes it sharp (the parametric
    # distillation's bounds reach 1e-3), which the numeric slope check must not mistake for a kink.
    drift = expression_drift(DPO_EXPRESSION[0], {"alpha": alpha, "beta": alpha})
    assert np.all(np.asarray(drift(None, DriftInputs(RATIO, ADV), PROGRESS)) >= 0)
    with pytest.raises(UserError, match="non-zero slope"):
        expression_drift("relu((r - 1)*A)", {})
