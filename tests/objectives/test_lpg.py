"""LPG / TA-LPG (`metadisco.objectives.lpg`), for many random batches: zero meta-parameters give no update (pi^ = 0,
y^ uniform) and so does the ES's start; the backward GRU restarts at episode ends (nothing after an end reaches the
steps before it); a positive pi^ makes a gradient step raise log pi(a_t) (LPG's sign); bad options are named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.objectives import UPDATE_RULES, Progress, UpdateRuleInputs

SEEDS = range(12)
T, B, A = 9, 5, 3


def batch(seed: int, rule, done_at: int | None = None) -> UpdateRuleInputs:
    key = jax.random.PRNGKey(seed)
    k = jax.random.split(key, 6)
    terminal = jax.random.bernoulli(k[0], 0.2, (T, B))
    if done_at is not None:
        terminal = terminal.at[done_at].set(True)
    out = {"logits": jax.random.normal(k[1], (T + 1, B, A)),
           "y": jax.random.normal(k[2], (T + 1, B, rule.target_width))}
    return UpdateRuleInputs(jax.random.randint(k[3], (T + 1, B), 0, A), jax.random.normal(k[4], (T, B)), terminal,
                            out["logits"], out, out, jnp.float32(0.99), jnp.float32(0.95),
                            Progress(jax.random.uniform(k[5], ()), jnp.float32(100.0)))


def random_meta(rule, seed: int):
    leaves, treedef = jax.tree.flatten(rule.zero_meta())
    keys = jax.random.split(jax.random.PRNGKey(1000 + seed), len(leaves))
    return jax.tree.unflatten(treedef, [0.3 * jax.random.normal(k, x.shape) for k, x in zip(keys, leaves, strict=True)])


@pytest.mark.parametrize("seed", SEEDS)
def test_zero_and_the_es_start_move_nothing(seed):
    rule = UPDATE_RULES.make("lpg", hidden=16, lifetime=seed % 2 == 0)
    for meta in (rule.zero_meta(), rule.start_meta(jax.random.PRNGKey(seed), 1.0)):
        (pi_hat, y_hat), _ = rule(meta, batch(seed, rule), rule.init_state())
        assert pi_hat.shape == (T, B) and y_hat.shape == (T, B, rule.target_width)
        np.testing.assert_array_equal(np.asarray(pi_hat), 0.0)
        np.testing.assert_allclose(np.asarray(y_hat), 1.0 / rule.target_width, rtol=1e-6)
    start = rule.start_meta(jax.random.PRNGKey(seed), 1.0)
    assert float(jnp.abs(start["gru"]["hidden"]).sum()) > 0  # not a saddle: the heads have a gradient


@pytest.mark.parametrize("seed", SEEDS)
def test_the_backward_gru_restarts_at_episode_ends(seed):
    rule = UPDATE_RULES.make("lpg", hidden=16)
    meta, end = random_meta(rule, seed), 1 + seed % (T - 2)
    inputs = batch(seed, rule, done_at=end)
    changed = inputs._replace(rewards=inputs.rewards.at[end + 1:].add(5.0),
                              actions=inputs.actions.at[end + 1:].set((inputs.actions[end + 1:] + 1) % A))
    (pi_a, y_a), _ = rule(meta, inputs, ())
    (pi_b, y_b), _ = rule(meta, changed, ())
    np.testing.assert_array_equal(np.asarray(pi_a[: end + 1]), np.asarray(pi_b[: end + 1]))
    np.testing.assert_array_equal(np.asarray(y_a[: end + 1]), np.asarray(y_b[: end + 1]))
    assert not np.array_equal(np.asarray(pi_a[end + 1:]), np.asarray(pi_b[end + 1:]))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_positive_pi_hat_raises_the_taken_actions_probability(seed):
    rule = UPDATE_RULES.make("lpg", hidden=8)
    meta = rule.zero_meta()
    meta["pi"]["bias"] = jnp.ones((1,))  # pi^ = 1 everywhere: the agent's REINFORCE step on every taken action
    inputs = batch(seed, rule)
    targets, _ = rule(meta, inputs, ())
    logits = inputs.agent_out["logits"]

    def loss(logits):
        return jnp.sum(rule.loss(inputs, {**inputs.agent_out, "logits": logits}, targets))

    stepped = logits - 0.1 * jax.grad(loss)(logits)
    taken = inputs.actions[:-1, :, None]
    before = jnp.take_along_axis(jax.nn.log_softmax(logits[:-1]), taken, -1)
    after = jnp.take_along_axis(jax.nn.log_softmax(stepped[:-1]), taken, -1)
    assert bool(jnp.all(after > before))


@pytest.mark.parametrize("options,message", [({"hidden": 0}, "hidden must be a positive integer"),
                                             ({"target_width": 1}, "at least 2"), ({"alpha_y": 0.0}, "alpha_y")])
def test_bad_options_are_named(options, message):
    with pytest.raises(UserError, match=message):
        UPDATE_RULES.make("lpg", **options)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_figures_return_to_go_is_the_discounted_sum_to_the_episodes_end(seed):
    from metadisco.analysis.update_rule_figures import return_to_go

    rng = np.random.default_rng(seed)
    rewards, ends = rng.normal(size=(T, B)).astype(np.float32), rng.random((T, B)) < 0.2
    got = np.asarray(return_to_go(jnp.asarray(rewards), jnp.asarray(ends), 0.9))
    for b in range(B):
        for t in range(T):
            want, discount = 0.0, 1.0
            for s in range(t, T):
                want += discount * rewards[s, b]
                if ends[s, b]:
                    break
                discount *= 0.9
            assert got[t, b] == pytest.approx(want, rel=1e-5, abs=1e-5)


def test_the_lpg_figure_reads_the_rules_targets(tmp_path):
    from metadisco.analysis.update_rule_figures import LPG_AXES, lpg_targets, rule_targets_figure

    rule = UPDATE_RULES.make("lpg", hidden=16, lifetime=True)
    network = rule.agent(A, (8,), "tanh")
    obs = jax.random.normal(jax.random.PRNGKey(0), (T + 1, B, 6))
    params = network.init(jax.random.PRNGKey(1), obs[0])
    inputs = batch(0, rule)
    sample = (obs, inputs.actions, jnp.concatenate([inputs.rewards, jnp.zeros((1, B))]),
              jnp.concatenate([inputs.is_terminal, jnp.zeros((1, B), bool)]), inputs.behaviour_logits)
    targets = lpg_targets(rule, random_meta(rule, 0), params, network, sample, 0.99, inputs.progress)
    assert {k: v.shape for k, v in targets.items()} == {k: (T * B,) for k in targets}
    assert all(np.all(np.isfinite(v)) for v in targets.values())
    path = rule_targets_figure(targets, "lpg", tmp_path, LPG_AXES)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
