"""disco_rl's handcrafted actor-critic update rule, ported: V-trace against a direct reference on many random
inputs, the rule's targets and loss, learning Catch, and (where DeepMind's disco_rl is installed) equality with
DeepMind's own code."""

import importlib.util
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco import BUILTIN_OBJECTIVES, get_preset
from metadisco.objectives import UPDATE_RULES, Progress, UpdateRuleInputs
from metadisco.rl.vtrace import vtrace
from metadisco.runs.seeds import train_seeds
from metadisco.trainers.algorithm import get_algorithm

ROOT = Path(__file__).resolve().parents[2]


def reference_vtrace(v_tm1, v_t, r, d, rho, lam):
    """Espeholt et al. (2018), eq. 1, summed term by term in float64 (one trajectory)."""
    v_tm1, v_t, r, d, rho = (np.asarray(x, np.float64) for x in (v_tm1, v_t, r, d, rho))
    n = len(r)
    c, clipped = lam * np.minimum(1.0, rho), np.minimum(1.0, rho)
    td = clipped * (r + d * v_t - v_tm1)
    errors = np.zeros(n)
    for s in range(n):
        total, weight = 0.0, 1.0
        for t in range(s, n):
            total += weight * td[t]
            weight *= d[t] * c[t]
        errors[s] = total
    vs = v_tm1 + errors
    boot = np.append(lam * vs[1:] + (1 - lam) * v_tm1[1:], v_t[-1])
    return errors, clipped * (r + d * boot - v_tm1)


@pytest.mark.parametrize("seed", range(15))
def test_vtrace_equals_its_definition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    v = rng.normal(size=n + 1)
    r, rho = rng.normal(size=n), np.exp(rng.normal(size=n))
    d = 0.97 * (rng.random(n) > 0.2)
    lam = float(rng.random())
    errors, adv = vtrace(*(jnp.asarray(x, jnp.float32) for x in (v[:-1], v[1:], r, d, rho)), lam)
    want_errors, want_adv = reference_vtrace(v[:-1], v[1:], r, d, rho, lam)
    np.testing.assert_allclose(errors, want_errors, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(adv, want_adv, rtol=1e-4, atol=1e-5)


def test_on_policy_vtrace_at_lambda_one_is_the_discounted_return():
    rng = np.random.default_rng(0)
    v, r = rng.normal(size=6), rng.normal(size=5)
    d = np.full(5, 0.9)
    errors, _ = vtrace(*(jnp.asarray(x, jnp.float32) for x in (v[:-1], v[1:], r, d, np.ones(5))), 1.0)
    returns = [sum(0.9 ** (k - t) * r[k] for k in range(t, 5)) + 0.9 ** (5 - t) * v[-1] for t in range(5)]
    np.testing.assert_allclose(np.asarray(errors) + v[:-1], returns, rtol=1e-5)


def test_the_rule_is_handcrafted_and_the_update_rule_algorithms_control():
    rule = UPDATE_RULES.make("actor_critic")
    assert rule.zero_meta() == {} and BUILTIN_OBJECTIVES["actor_critic"].algorithm == "update_rule"
    assert get_algorithm("update_rule").control == "actor_critic"
    agent = rule.agent(3, (8,), "relu")
    out = agent.apply(agent.init(jax.random.PRNGKey(0), jnp.zeros((1, 4))), jnp.zeros((2, 4)))
    assert out["logits"].shape == (2, 3) and out["v"].shape == (2, 601)


def test_the_policy_gradient_moves_the_taken_actions_logit_by_its_advantage():
    """With value and entropy costs 0, d loss / d logit(a_t) = -(1 - pi(a_t)) adv_t."""
    rng = np.random.default_rng(1)
    t, b, a = 4, 2, 3
    rule = UPDATE_RULES.make("actor_critic", value_cost=0.0, entropy_cost=0.0)
    out = {"logits": jnp.asarray(rng.normal(size=(t + 1, b, a)), jnp.float32),
           "v": jnp.asarray(rng.normal(size=(t + 1, b, 601)), jnp.float32)}
    acts = jnp.asarray(rng.integers(0, a, (t + 1, b)), jnp.int32)
    inputs = UpdateRuleInputs(acts, jnp.asarray(rng.normal(size=(t, b)), jnp.float32), jnp.zeros((t, b), bool),
                              out["logits"], out, out, jnp.float32(0.99), jnp.float32(0.95),
                              Progress(jnp.float32(0.0), jnp.float32(1.0)))
    targets, _ = rule(None, inputs, rule.init_state())
    grad = jax.grad(lambda o: jnp.sum(rule.loss(inputs, o, targets)))(out)["logits"][:-1]
    pi = jax.nn.softmax(out["logits"][:-1])
    taken = np.asarray(acts[:-1])
    g = np.take_along_axis(np.asarray(grad), taken[..., None], -1)[..., 0]
    p = np.take_along_axis(np.asarray(pi), taken[..., None], -1)[..., 0]
    np.testing.assert_allclose(g, -(1 - p) * np.asarray(targets["adv"]), rtol=1e-4, atol=1e-6)


def test_the_port_equals_deepminds_code():
    """Advantages, TD errors, values, EMA states, the loss and its gradients equal DeepMind's disco_rl's on random
    inputs (the whole check and its output: results/actor_critic_port/)."""
    pytest.importorskip("disco_rl", reason="DeepMind's disco_rl (with dm-haiku, rlax) is not installed here")
    spec = importlib.util.spec_from_file_location("ac_port", ROOT / "results" / "actor_critic_port" / "check.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    with jax.default_matmul_precision("highest"):
        cases = check.one_case(0, 6, 2, 3, 2.0, False, jnp.float32)
    assert max(d["relative"] for c in cases.values() for d in c.values()) <= check.TOLERANCE["float32"]


@pytest.mark.heavy
@pytest.mark.slow  # 70 s on 2 cores
def test_the_actor_critic_rule_learns_catch():
    """DeepMind's eval-notebook learner settings on Catch (update_rule_classic) with a 128-128 torso, at 40,000 of
    its 58,000 steps: measured here, the final returns of 4 seeds were 0.47-0.95 (0.63-0.88 with the preset's
    512-512 torso at 58,000); a random policy scores about -0.6."""
    objective = BUILTIN_OBJECTIVES["actor_critic"]
    config = replace(get_preset("update_rule_classic"), total_timesteps=40_000, hidden_sizes=(128, 128))
    result = train_seeds("Catch-bsuite", objective, objective.zero_meta(), config, num_seeds=4)
    assert result.final_return.min() > 0.3 and result.final_return.mean() > 0.5, result.final_return
