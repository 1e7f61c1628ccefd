"""Disco103's port (metadisco.objectives.disco) against DeepMind's own code, on identical inputs.

Needs DeepMind's `disco_rl` with its dependencies (dm-haiku, rlax, distrax) importable beside metadisco, e.g.

    pip install "git+https://github.com/google-deepmind/disco_rl@9059a29" dm-env -c constraints.txt
    python results/disco103_port/disco103_port.py --weights disco_103.npz --out results/disco103_port/port_check.json

Two kinds of input, at XLA's highest matmul precision:
- recorded: DeepMind's Agent with its eval notebook's settings (an MLP 512-512 torso, lr 1e-2) acting in its
  jittable Catch; DeepMind's `learner_step` runs three updates on the same batch, and before each the port gets the
  same rollout, agent outputs, target outputs and meta-state. Compared: the meta-network's outputs (pi, y, z,
  meta_input_emb), the value estimates, the new meta-state (meta-LSTM, both EMAs), the loss, and the gradient of
  the loss with respect to every agent parameter (DeepMind's network in both, so a difference is the rule's).
- random: agent outputs, rewards, terminals and actions drawn at random at several sizes and scales, with a meta-
  state advanced by earlier random updates; compared as above, with gradients taken with respect to the outputs.

The random cases run twice, in float32 and in float64: rounding explains a float32 difference only if the float64
one vanishes. Writes, per case, each quantity's largest absolute difference and the largest magnitude it had, and
exits 1 if a relative difference exceeds `TOLERANCE`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_default_matmul_precision", "highest")

# Largest difference allowed, relative to the quantity's largest magnitude: float32's rounding (a few ulps through
# the LSTMs and the 601-bin values), float64's.
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def _diff(ours, theirs) -> dict:
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    scale = float(np.max(np.abs(theirs))) if theirs.size else 0.0
    err = float(np.max(np.abs(ours - theirs))) if theirs.size else 0.0
    return {"max_abs_diff": err, "max_abs": scale, "relative": err / max(scale, 1e-6)}


def _tree_diff(ours, theirs) -> dict:
    lo, lt = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(lo) == len(lt)
    diffs = [_diff(a, b) for a, b in zip(lo, lt, strict=True)]
    worst = max(diffs, key=lambda d: d["relative"])
    return worst | {"arrays": len(diffs)}


def _deepmind_rule():
    from disco_rl import agent as agent_lib
    from disco_rl.update_rules import disco

    settings = agent_lib.get_settings_disco()
    return disco.DiscoUpdateRule(**settings.update_rule), settings.hyper_params.to_dict()


def _compare_step(meta_params, dm_rule, hyper, dm_meta_state, rollout_dm, target_out, ours_loss_of, theirs_loss_of,
                  wrt) -> dict:
    """One update's comparison. `rollout_dm` is DeepMind's UpdateRuleInputs; `*_loss_of(wrt, meta_out, ...)` the
    two sides' total loss as a function of what gradients are taken against."""
    from metadisco.objectives.disco import meta_net as mn
    from metadisco.objectives.disco import rule

    meta_out_dm, new_state_dm = dm_rule.unroll_meta_net(
        meta_params, dm_meta_state["target_params"], None, dm_meta_state, rollout_dm, hyper,
        lambda *_: (target_out, None), None)
    dm_rnn = dm_meta_state["rnn_state"]["lstm"]["meta_rnn_state"]  # Haiku's state tree of the meta-LSTM
    ours_state = rule.MetaState(
        mn.LSTMState(dm_rnn.hidden, dm_rnn.cell),
        rule.EmaState(*(dm_meta_state["adv_ema_state"][k] for k in ("moment1", "moment2", "decay_product"))),
        rule.EmaState(*(dm_meta_state["td_ema_state"][k] for k in ("moment1", "moment2", "decay_product"))))
    ours_rollout = rule.Rollout(rollout_dm.actions, rollout_dm.rewards, rollout_dm.is_terminal,
                                rollout_dm.behaviour_agent_out["logits"])
    # Both sides run op by op: DeepMind's meta-net asserts that its inputs are concrete arrays, so it cannot be
    # jitted as it is. Ours compiled differed from it by up to 7e-7 in float64 (the normalised advantages after a
    # first update; the EMAs' decay product is float32 in both codes), op by op by 1e-15.
    meta_out, estimates, new_state = rule.unroll_meta_net(
        meta_params, ours_state, ours_rollout, dict(rollout_dm.agent_out), dict(target_out))
    out = {f"meta_out/{k}": _diff(meta_out[k], meta_out_dm[k]) for k in ("pi", "y", "z", "meta_input_emb")}
    for k in ("q_target", "adv", "normalized_adv", "qv_adv", "normalized_qv_adv", "q_value", "q_td",
              "normalized_q_td"):
        out[f"value/{k}"] = _diff(getattr(estimates, k), meta_out_dm[k])
    new_rnn_dm = new_state_dm["rnn_state"]["lstm"]["meta_rnn_state"]
    out["meta_state/rnn"] = _tree_diff(tuple(new_state.rnn), (new_rnn_dm.hidden, new_rnn_dm.cell))
    for name, ema in (("adv_ema", new_state.adv_ema), ("td_ema", new_state.td_ema)):
        dm = new_state_dm[f"{name[:-4]}_ema_state"]
        out[f"meta_state/{name}"] = _tree_diff(tuple(ema), (dm["moment1"], dm["moment2"], dm["decay_product"]))
    loss_o, grad_o = jax.value_and_grad(ours_loss_of)(wrt, meta_out, estimates)
    loss_t, grad_t = jax.value_and_grad(theirs_loss_of)(wrt, meta_out_dm)
    out["loss"] = _diff(loss_o, loss_t)
    out["gradient"] = _tree_diff(grad_o, grad_t)
    return out, new_state_dm


def _loss_pair(dm_rule, hyper, make_dm_inputs, make_ours, mask):
    """Both sides' masked mean loss as functions of `wrt`: (ours(wrt, meta_out, estimates), theirs(wrt, meta_out))."""
    from metadisco.objectives.disco import rule

    def theirs(wrt, meta_out_dm):
        inputs = make_dm_inputs(wrt)
        loss, _ = dm_rule.agent_loss(inputs, meta_out_dm, hyper, backprop=False)
        loss_nm, _ = dm_rule.agent_loss_no_meta(inputs, meta_out_dm, hyper)
        return jnp.sum((loss + loss_nm) * mask) / (jnp.sum(mask) + 1e-8)

    def ours(wrt, meta_out, estimates):
        ours_rollout, agent_out = make_ours(wrt)
        return jnp.sum(rule.agent_loss(ours_rollout, agent_out, meta_out, estimates) * mask) / (jnp.sum(mask) + 1e-8)

    return ours, theirs


def _random_lifetime(meta_params, dm_rule, hyper, seed, steps, batch, actions, scale, dtype) -> dict:
    """Three successive updates on random batches of one size and scale: later updates see a meta-state that
    earlier ones changed."""
    from disco_rl import types

    from metadisco.objectives.disco import rule

    def normal(k, shape):
        return scale * jax.random.normal(k, shape, dtype)

    def outputs(k):
        ks = jax.random.split(k, 5)
        return {"logits": normal(ks[0], (steps + 1, batch, actions)), "y": normal(ks[1], (steps + 1, batch, 600)),
                "z": normal(ks[2], (steps + 1, batch, actions, 600)),
                "aux_pi": normal(ks[3], (steps + 1, batch, actions, actions)),
                "q": normal(ks[4], (steps + 1, batch, actions, 601))}

    def one_update(ks, dm_state):
        agent_out, target_out = outputs(ks[0]), outputs(ks[1])
        acts = jax.random.randint(ks[2], (steps + 1, batch), 0, actions)
        rewards = normal(ks[3], (steps, batch))
        terminal = jax.random.bernoulli(ks[4], 0.15, (steps, batch))
        behaviour = {"logits": normal(ks[5], (steps + 1, batch, actions))}

        def dm_inputs(out):
            return types.UpdateRuleInputs(observations=jnp.zeros((steps + 1, batch)), actions=acts, rewards=rewards,
                                          is_terminal=terminal, agent_out=out, behaviour_agent_out=behaviour)

        def ours(out):
            return rule.Rollout(acts, rewards, terminal, behaviour["logits"]), out

        ours_loss, theirs_loss = _loss_pair(dm_rule, hyper, dm_inputs, ours, jnp.ones((steps, batch), dtype))
        return _compare_step(meta_params, dm_rule, hyper, dm_state, dm_inputs(agent_out), target_out, ours_loss,
                             theirs_loss, agent_out)

    key = jax.random.PRNGKey(seed)
    dm_state = dm_rule.init_meta_state(key, params={"w": jnp.zeros(2)})
    name = f"random/{jnp.dtype(dtype).name}/seed{seed}/T{steps}xB{batch}xA{actions}/scale{scale:g}"
    results = {}
    for update in range(3):
        key, *ks = jax.random.split(key, 8)
        results[f"{name}/update{update}"], dm_state = one_update(ks, dm_state)
    return results


def random_cases(meta_params, seeds=(0, 1, 2), shapes=((7, 3, 3), (20, 4, 5)), scales=(1.0, 5.0),
                 dtype=jnp.float32) -> dict:
    dm_rule, hyper = _deepmind_rule()
    results = {}
    for seed in seeds:
        for steps, batch, actions in shapes:
            for scale in scales:
                results |= _random_lifetime(meta_params, dm_rule, hyper, seed, steps, batch, actions, scale, dtype)
    return results


def notebook_agent(num_envs: int):
    """DeepMind's jittable Catch with `num_envs` envs and the agent its eval notebook builds (512-512 MLP, LSTM action
    model, lr 1e-2): (env, agent, settings)."""
    from disco_rl import agent as agent_lib
    from disco_rl.environments import jittable_envs

    env = jittable_envs.CatchJittableEnvironment(batch_size=num_envs, env_settings=jittable_envs.get_config_catch())
    settings = agent_lib.get_settings_disco()
    settings.net_settings.name = "mlp"
    settings.net_settings.net_args = dict(dense=(512, 512), model_arch_name="lstm", head_w_init_std=1e-2,
                                          model_kwargs=dict(head_mlp_hiddens=(128,), lstm_size=128))
    settings.learning_rate = 1e-2
    agent = agent_lib.Agent(agent_settings=settings, single_observation_spec=env.single_observation_spec(),
                            single_action_spec=env.single_action_spec(), batch_axis_name=None)
    return env, agent, settings


def catch_cases(meta_params, updates=3, batch=4, rollout_len=29, seed=0) -> dict:
    from disco_rl import types

    env, agent, settings = notebook_agent(batch)
    key = jax.random.PRNGKey(seed)
    env_state, ts = env.reset(key)
    learner_state = agent.initial_learner_state(key)
    actor_state = agent.initial_actor_state(key)

    def step(carry, k):
        env_state, ts, actor_state = carry
        actor_ts, actor_state = agent.actor_step(learner_state.params, k, ts, actor_state)
        env_state, ts = env.step(env_state, actor_ts.actions)
        return (env_state, ts, actor_state), actor_ts

    _, stacked = jax.lax.scan(step, (env_state, ts, actor_state), jax.random.split(key, rollout_len))
    rollout = types.ActorRollout.from_timestep(stacked)  # the batch all updates learn from, as a replayed one
    dm_rule, hyper = agent.update_rule, settings.hyper_params.to_dict()
    mask = (rollout.discounts[:-1] > 0).astype(jnp.float32)

    def dm_inputs(params):
        agent_out, _ = agent.unroll_net(params, actor_state, rollout)
        return types.UpdateRuleInputs(observations=rollout.observations, actions=rollout.actions,
                                      rewards=rollout.rewards[1:], is_terminal=rollout.discounts[1:] == 0,
                                      behaviour_agent_out=rollout.agent_outs, agent_out=agent_out)

    def ours(params):
        from metadisco.objectives.disco import rule
        agent_out, _ = agent.unroll_net(params, actor_state, rollout)
        return rule.Rollout(rollout.actions, rollout.rewards[1:], rollout.discounts[1:] == 0,
                            rollout.agent_outs["logits"]), dict(agent_out)

    ours_loss, theirs_loss = _loss_pair(dm_rule, hyper, dm_inputs, ours, mask)
    results = {}
    for update in range(updates):
        target_out, _ = agent.unroll_net(learner_state.meta_state["target_params"], actor_state, rollout)
        cmp, _ = _compare_step(meta_params, dm_rule, hyper, learner_state.meta_state, dm_inputs(learner_state.params),
                               target_out, ours_loss, theirs_loss, learner_state.params)
        results[f"catch/seed{seed}/update{update}"] = cmp
        learner_state, _, _ = agent.learner_step(key, rollout, learner_state, actor_state, meta_params, False)
    return results


def _worst(results: dict, prefix: str) -> dict:
    case, name, d = max(((case, name, d) for case, cmp in results.items() if case.startswith(prefix)
                         for name, d in cmp.items()), key=lambda x: x[2]["relative"])
    return {"case": case, "quantity": name, **d}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", required=True, help="disco_103.npz")
    parser.add_argument("--out", required=True, help="where the JSON of differences goes")
    args = parser.parse_args(argv)
    from importlib import metadata

    from metadisco.core.io import atomic_write_text
    from metadisco.objectives.disco.weights import load_disco103

    weights = load_disco103(args.weights)
    results = catch_cases(jax.tree.map(jnp.asarray, weights))
    results |= random_cases(jax.tree.map(jnp.asarray, weights))
    with jax.enable_x64(True):  # DeepMind's Catch takes int32 only, so float64 is switched on for these alone
        results |= random_cases(jax.tree.map(lambda w: jnp.asarray(w, jnp.float64), weights), dtype=jnp.float64)
    worst = {"float32": max((_worst(results, "catch/"), _worst(results, "random/float32/")),
                            key=lambda d: d["relative"]),
             "float64": _worst(results, "random/float64/")}
    summary = {"tolerance_relative": TOLERANCE, "worst": worst,
               "versions": {p: metadata.version(p) for p in ("jax", "jaxlib", "dm-haiku", "rlax", "distrax")},
               "disco_rl_commit": "9059a29", "matmul_precision": "highest", "cases": results}
    atomic_write_text(Path(args.out), json.dumps(summary, indent=1) + "\n")
    for dtype, w in worst.items():
        print(f"{dtype}: worst relative difference {w['relative']:.2e} ({w['quantity']} in {w['case']})")
    print(f"{len(results)} cases -> {args.out}")
    ok = all(w["relative"] <= TOLERANCE[dtype] for dtype, w in worst.items())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
