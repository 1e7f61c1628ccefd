"""Disco103's port (`metadisco.objectives.disco`): the released file loads bit for bit and a damaged one is named;
the pieces hold their invariants for many random inputs (two-hot values read back, Retrace's limits, the backward
LSTM's resets, the agent loss's minimum at the targets); and, where DeepMind's `disco_rl` is installed beside
metadisco, every output, meta-state, loss and gradient equals DeepMind's code's
(results/disco103_port/disco103_port.py)."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.objectives.disco import meta_net as mn
from metadisco.objectives.disco import rule
from metadisco.objectives.disco.weights import SHAPES, SIZE, load_disco103
from metadisco.rl.categorical_value import (
    categorical_value,
    categorical_value_loss,
    from_two_hot,
    signed_hyperbolic,
    signed_parabolic,
    two_hot,
)
from metadisco.rl.retrace import off_policy_returns

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = ROOT.parent / "shared" / "data" / "disco103" / "disco_103.npz"
needs_weights = pytest.mark.skipif(not WEIGHTS.exists(), reason="the released disco_103.npz is not at hand")
SEEDS = range(10)
meta_net = jax.jit(mn.meta_net)  # compiled once for every seed's inputs of one size


@needs_weights
def test_the_released_file_loads_bit_for_bit():
    params = load_disco103(WEIGHTS)
    with np.load(WEIGHTS) as npz:
        raw = {k: npz[k] for k in npz.files}
    assert len(raw) == 2 * len(params) == 42
    assert sum(a.size for a in raw.values()) == SIZE == 754_778
    for module, wb in params.items():
        for part in ("w", "b"):
            assert wb[part].dtype == np.float32
            assert np.array_equal(wb[part], raw[f"{module}/{part}"])
    norm = np.sqrt(sum(np.sum(a.astype(np.float64) ** 2) for a in raw.values()))
    assert np.sqrt(sum(np.sum(wb[p].astype(np.float64) ** 2) for wb in params.values() for p in "wb")) == norm


def _write(path, arrays):
    np.savez(path, **arrays)
    return path


def _zeros():
    return {f"{m}/{p}": np.zeros(s, np.float32) for m, (w, b) in SHAPES.items() for p, s in (("w", w), ("b", b))}


@pytest.mark.parametrize("damage, message", [
    (lambda a: a.pop("lstm/linear_4/w"), "missing"),
    (lambda a: a.__setitem__("extra/w", np.zeros(1, np.float32)), "unexpected"),
    (lambda a: a.__setitem__("lstm/linear_4/w", np.zeros((16, 2), np.float32)), r"expected float32\[16, 1\]"),
    (lambda a: a.__setitem__("lstm/linear_4/w", np.zeros((16, 1), np.float64)), "expected float32"),
    (lambda a: a["lstm/linear_4/b"].__setitem__(0, np.nan), "non-finite"),
])
def test_a_damaged_file_is_named(tmp_path, damage, message):
    arrays = _zeros()
    damage(arrays)
    with pytest.raises(UserError, match=message):
        load_disco103(_write(tmp_path / "w.npz", arrays))


def test_a_file_that_is_not_an_npz_is_named(tmp_path):
    (tmp_path / "w.npz").write_text("not a zip")
    with pytest.raises(UserError, match=r"not an .npz \(zip\) archive"):
        load_disco103(tmp_path / "w.npz")


@pytest.mark.parametrize("seed", SEEDS)
def test_two_hot_reads_back_its_scalar(seed):
    x = jax.random.uniform(jax.random.PRNGKey(seed), (200,), minval=-300.0, maxval=300.0)
    probs = two_hot(x, -300.0, 300.0, 601)
    assert np.allclose(probs.sum(-1), 1.0, atol=1e-5)
    assert np.all(probs >= 0) and np.all((probs > 0).sum(-1) <= 2)
    assert np.allclose(from_two_hot(probs, -300.0, 300.0), x, atol=1e-3)
    assert np.allclose(signed_parabolic(signed_hyperbolic(x)), x, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_value_loss_is_least_at_its_target(seed):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    target = jax.random.uniform(k1, (50,), minval=-100.0, maxval=100.0)
    exact = jnp.log(two_hot(signed_hyperbolic(target), -300.0, 300.0, 601) + 1e-30)  # logits of the target itself
    assert np.allclose(categorical_value(exact, 300.0), target, rtol=1e-3, atol=1e-2)
    other = exact + jax.random.normal(k2, exact.shape)
    assert np.all(categorical_value_loss(exact, target, 300.0) < categorical_value_loss(other, target, 300.0))


@pytest.mark.parametrize("seed", SEEDS)
def test_retrace_limits(seed):
    ks = jax.random.split(jax.random.PRNGKey(seed), 4)
    k, b = 9, 3
    q, v = jax.random.normal(ks[0], (k - 1, b)), jax.random.normal(ks[1], (k, b))
    r, d = jax.random.normal(ks[2], (k, b)), 0.9 * jax.random.bernoulli(ks[3], 0.8, (k, b))
    one_step = off_policy_returns(q, v, r, d, jnp.zeros((k - 1, b)))
    assert np.allclose(one_step, r + d * v, atol=1e-5)  # c = 0: one-step targets
    monte_carlo = off_policy_returns(v[:-1], v, r, d, jnp.ones((k - 1, b)))  # c = 1 and q = v: the return
    expected, acc = [], r[-1] + d[-1] * v[-1]
    for t in reversed(range(k)):
        acc = acc if t == k - 1 else r[t] + d[t] * acc
        expected.append(acc)
    assert np.allclose(monte_carlo, jnp.stack(expected[::-1]), atol=1e-4)


def _random_params(key):
    params = {}
    for i, (module, (w, b)) in enumerate(SHAPES.items()):
        kw, kb = jax.random.split(jax.random.fold_in(key, i))
        params[module] = {"w": jax.random.normal(kw, w) / np.sqrt(np.prod(w[:-1])), "b": 0.1 * jax.random.normal(kb, b)}
    return params


def _random_inputs(key, steps=8, batch=3, actions=4, terminal=None):
    ks = jax.random.split(key, 16)
    n = lambda i, *shape: jax.random.normal(ks[i], shape)  # noqa: E731

    def outputs(i):
        return {"logits": n(i, steps + 1, batch, actions), "y": n(i + 1, steps + 1, batch, 600),
                "z": n(i + 2, steps + 1, batch, actions, 600)}

    is_terminal = jnp.zeros((steps, batch), bool) if terminal is None else terminal
    return mn.MetaNetInputs(
        actions=jax.random.randint(ks[0], (steps + 1, batch), 0, actions), rewards=n(1, steps, batch),
        is_terminal=is_terminal, agent_out=outputs(2), behaviour_logits=n(5, steps + 1, batch, actions),
        target_out=outputs(6), v_scalar=n(9, steps + 1, batch), adv=n(10, steps, batch),
        normalized_adv=n(11, steps, batch), q=n(12, steps + 1, batch, actions), qv_adv=n(13, steps + 1, batch, actions),
        normalized_qv_adv=n(14, steps + 1, batch, actions))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_backward_lstm_stops_at_an_episode_end(seed):
    """The per-trajectory LSTM runs from the last step back and starts afresh at a terminal step, so what happens
    after an episode ended does not reach that episode's targets; without the end it does."""
    key = jax.random.PRNGKey(seed)
    params = _random_params(jax.random.fold_in(key, 1))
    steps, end = 8, int(jax.random.randint(jax.random.fold_in(key, 2), (), 1, 6))
    terminal = jnp.zeros((steps, 3), bool).at[end].set(True)
    inputs = _random_inputs(jax.random.fold_in(key, 3), steps, terminal=terminal)
    later = inputs._replace(rewards=inputs.rewards.at[end + 1:].add(5.0))
    state = mn.LSTMState(jax.random.normal(key, (128,)), jax.random.normal(jax.random.fold_in(key, 4), (128,)))
    out, _ = meta_net(params, state, inputs)
    out_later, _ = meta_net(params, state, later)
    for name in ("pi", "y", "z"):
        assert np.array_equal(out[name][: end + 1], out_later[name][: end + 1])
    no_end = inputs._replace(is_terminal=jnp.zeros_like(terminal))
    out_no_end, _ = meta_net(params, state, no_end)
    out_no_end_later, _ = meta_net(params, state, no_end._replace(rewards=later.rewards))
    assert not np.allclose(out_no_end["pi"][: end + 1], out_no_end_later["pi"][: end + 1])


value_estimates = jax.jit(rule.value_estimates)
POLICY_COSTS = {"pi": 1.0, "y": 1.0, "z": 1.0, "aux_policy": 0.0, "value": 0.0}  # the three KL terms alone


@jax.jit
def policy_loss(rollout, out, meta_out, estimates):
    return rule.agent_loss(rollout, out, meta_out, estimates, POLICY_COSTS).sum()


policy_grad = jax.jit(jax.grad(policy_loss, argnums=1))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_agent_loss_is_least_at_the_targets(seed):
    """With the agent's policy, y and z(a) equal to the meta-network's targets, its loss's gradient with respect to
    them is zero, and any other outputs lose more (the targets are KL targets)."""
    key = jax.random.PRNGKey(seed)
    steps, batch, actions = 6, 2, 3
    inputs = _random_inputs(key, steps, batch, actions)
    rollout = rule.Rollout(inputs.actions, inputs.rewards, inputs.is_terminal, inputs.behaviour_logits)
    ks = jax.random.split(jax.random.fold_in(key, 1), 5)
    meta_out = {"pi": jax.random.normal(ks[0], (steps, batch, actions)),
                "y": jax.random.normal(ks[1], (steps, batch, 600)), "z": jax.random.normal(ks[2], (steps, batch, 600))}
    estimates = value_estimates(rollout, {**inputs.agent_out, "q": jax.random.normal(ks[3], (steps + 1, batch,
                                     actions, 601))}, {**inputs.target_out, "q": jax.random.normal(ks[4], (steps + 1,
                                     batch, actions, 601))}, rule.ema_init(), rule.ema_init())[0]
    z = inputs.agent_out["z"]
    z_at = z.at[:-1].set(jnp.where(jax.nn.one_hot(inputs.actions[:-1], actions, dtype=bool)[..., None],
                                   meta_out["z"][:, :, None], z[:-1]))
    at = {"logits": inputs.agent_out["logits"].at[:-1].set(meta_out["pi"]),
          "y": inputs.agent_out["y"].at[:-1].set(meta_out["y"]), "z": z_at,
          "aux_pi": jnp.zeros((steps + 1, batch, actions, actions)), "q": jnp.zeros((steps + 1, batch, actions, 601))}
    grads = policy_grad(rollout, at, meta_out, estimates)
    for name in ("logits", "y", "z"):
        assert np.allclose(grads[name], 0.0, atol=1e-6), name
    assert np.allclose(policy_loss(rollout, at, meta_out, estimates), 0.0, atol=1e-4)
    assert policy_loss(rollout, inputs.agent_out | {"aux_pi": at["aux_pi"], "q": at["q"]}, meta_out, estimates) \
        > policy_loss(rollout, at, meta_out, estimates)


def _port_check():
    spec = importlib.util.spec_from_file_location("disco103_port", ROOT / "experiments" / "disco103_port.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_weights
def test_the_port_equals_deepminds_code():
    """Every output, value estimate, meta-state, loss and gradient equal to DeepMind's own code's on random inputs
    (the recorded Catch rollouts are in results/disco103_port/, by the same script)."""
    pytest.importorskip("disco_rl", reason="DeepMind's disco_rl (with dm-haiku, rlax) is not installed here")
    check = _port_check()
    params = jax.tree.map(jnp.asarray, load_disco103(WEIGHTS))
    with jax.default_matmul_precision("highest"):
        results = check.random_cases(params, seeds=(0,), shapes=((5, 2, 3),), scales=(1.0, 4.0))
    for case, cmp in results.items():
        for name, d in cmp.items():
            assert d["relative"] <= check.TOLERANCE["float32"], (case, name, d)
