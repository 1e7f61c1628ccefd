"""The actor-critic rule's port (`metadisco.objectives.actor_critic`) against DeepMind's own code
(`disco_rl.update_rules.actor_critic.ActorCritic`, with `agent.get_settings_actor_critic`'s settings) on identical
random inputs.

Needs DeepMind's `disco_rl` with its dependencies (dm-haiku, rlax, distrax) importable beside metadisco:

    pip install distrax rlax dm-haiku jmp immutabledict ml_collections -c constraints.txt
    pip install --no-deps "git+https://github.com/google-deepmind/disco_rl@9059a29"
    python results/actor_critic_port/check.py results/actor_critic_port/port_check.json

Each case draws agent outputs (logits, 601-bin value logits), behaviour logits, actions, rewards and terminals at
one size and scale, and runs four learner steps on them (each step's outputs perturbed), so that both rules' EMA
states advance. Compared per step: the advantages, TD errors and values, the new EMA states, the per-step loss, and
the gradient of the summed loss with respect to the agent's outputs. Once in float32, once in float64: rounding
explains a float32 difference only if the float64 one vanishes. Writes each quantity's largest absolute difference
and largest magnitude, and exits 1 if a relative difference exceeds `TOLERANCE`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

TOLERANCE = {"float32": 1e-5, "float64": 1e-12}
SETTINGS = {"categorical_value": True, "num_bins": 601, "max_abs_value": 300.0, "nonlinear_value_transform": True,
            "normalize_adv": False, "normalize_td": False}
HYPER = {"discount_factor": 0.997, "vtrace_lambda": 0.95, "entropy_cost": 0.2, "pg_cost": 1.0, "value_cost": 0.5}


def _diff(ours, theirs) -> dict:
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    scale = float(np.max(np.abs(theirs))) if theirs.size else 0.0
    err = float(np.max(np.abs(ours - theirs))) if theirs.size else 0.0
    return {"max_abs_diff": err, "max_abs": scale, "relative": err / max(scale, 1e-30)}


def one_case(seed: int, steps: int, batch: int, actions: int, scale: float, normalize: bool, dtype) -> dict:
    from disco_rl import types
    from disco_rl.update_rules.actor_critic import ActorCritic

    from metadisco.objectives import UPDATE_RULES, Progress, UpdateRuleInputs

    # DeepMind's rule refuses normalize_td beside a categorical value, so `normalize` turns on normalize_adv alone.
    theirs_rule = ActorCritic(**dict(SETTINGS, normalize_adv=normalize))
    ours_rule = UPDATE_RULES.make("actor_critic", normalize_adv=normalize)
    rng = np.random.default_rng(seed)
    cast = lambda x: jnp.asarray(x, dtype)  # noqa: E731
    acts = jnp.asarray(rng.integers(0, actions, (steps + 1, batch)), jnp.int32)
    rewards = cast(rng.normal(scale=scale, size=(steps, batch)))
    terminal = jnp.asarray(rng.random((steps, batch)) < 0.15)
    mu = cast(rng.normal(size=(steps + 1, batch, actions)))
    theirs_state = theirs_rule.init_meta_state(jax.random.PRNGKey(0), None)
    ours_state = ours_rule.init_state()
    hyper = {k: jnp.asarray(v, dtype) for k, v in HYPER.items()}
    out = {}
    for step in range(4):
        agent_out = {"logits": cast(rng.normal(scale=scale, size=(steps + 1, batch, actions))),
                     "v": cast(rng.normal(scale=scale, size=(steps + 1, batch, 601)))}
        theirs_in = types.UpdateRuleInputs(observations=None, actions=acts, rewards=rewards, is_terminal=terminal,
                                           agent_out=agent_out, behaviour_agent_out={"logits": mu})
        theirs_meta, theirs_state = theirs_rule.unroll_meta_net(None, None, None, theirs_state, theirs_in, hyper,
                                                                None, jax.random.PRNGKey(0))
        ours_in = UpdateRuleInputs(acts, rewards, terminal, mu, agent_out, agent_out, hyper["discount_factor"],
                                   hyper["vtrace_lambda"], Progress(jnp.asarray(0.0, dtype), jnp.asarray(1.0, dtype)))
        ours_targets, ours_state = ours_rule(None, ours_in, ours_state)

        def theirs_loss(agent_out, theirs_in=theirs_in, theirs_meta=theirs_meta):
            import dataclasses
            rollout = dataclasses.replace(theirs_in, agent_out=agent_out)
            return theirs_rule.agent_loss(rollout, theirs_meta, hyper, backprop=False)[0]

        def ours_loss(agent_out, ours_in=ours_in, ours_targets=ours_targets):
            return ours_rule.loss(ours_in, agent_out, ours_targets)

        cmp = {
            "adv": _diff(ours_targets["adv"], theirs_meta["raw_advs"]),
            "normalized_adv": _diff(ours_targets["normalized_adv"], theirs_meta["normalized_advs"]),
            "td": _diff(ours_targets["td"], theirs_meta["tds"]),
            "normalized_td": _diff(ours_targets["normalized_td"], theirs_meta["normalized_tds"]),
            "values": _diff(ours_targets["values"], theirs_meta["values"]),
            "adv_ema": _diff(jnp.stack(ours_state["adv_ema"][:2]), jnp.stack([theirs_state["adv_ema_state"].moment1,
                                                                              theirs_state["adv_ema_state"].moment2])),
            "td_ema": _diff(jnp.stack(ours_state["td_ema"][:2]), jnp.stack([theirs_state["td_ema_state"].moment1,
                                                                            theirs_state["td_ema_state"].moment2])),
            "loss": _diff(ours_loss(agent_out), theirs_loss(agent_out)),
        }
        ours_grad = jax.grad(lambda o: jnp.sum(ours_loss(o)))(agent_out)
        theirs_grad = jax.grad(lambda o: jnp.sum(theirs_loss(o)))(agent_out)
        for name in ("logits", "v"):
            cmp[f"grad_{name}"] = _diff(ours_grad[name], theirs_grad[name])
        out[f"seed{seed}_T{steps}_B{batch}_A{actions}_scale{scale}_norm{int(normalize)}_step{step}"] = cmp
    return out


def main(path: str) -> int:
    report, worst = {}, {}
    for dtype_name, dtype in (("float32", jnp.float32), ("float64", jnp.float64)):
        jax.config.update("jax_enable_x64", dtype_name == "float64")
        cases = {}
        with jax.default_matmul_precision("highest"):
            for seed in (0, 1):
                for steps, batch, actions in ((7, 3, 3), (20, 4, 5)):
                    for scale in (1.0, 5.0):
                        for normalize in (False, True):
                            cases |= one_case(seed, steps, batch, actions, scale, normalize, dtype)
        report[dtype_name] = cases
        worst[dtype_name] = max(d["relative"] for c in cases.values() for d in c.values())
        print(f"{dtype_name}: {len(cases)} learner steps, largest relative difference {worst[dtype_name]:.2e} "
              f"(tolerance {TOLERANCE[dtype_name]:g})")
    Path(path).write_text(json.dumps({"worst_relative": worst, "cases": report}, indent=1) + "\n")
    return int(any(worst[k] > TOLERANCE[k] for k in worst))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "results/actor_critic_port/port_check.json"))
