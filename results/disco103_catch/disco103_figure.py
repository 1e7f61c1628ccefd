"""Issue 66, item 5: what Disco103 asks of an agent it trained, beside actor-critic's quantities. Trains one agent on
gymnax's Catch-bsuite with metadisco's update-rule trainer (the slow learning test's sizes: 2 envs x 29 steps, 600
updates, a 64-64 torso, 32 trajectories a learner step, lr 1e-2), then draws `rule_targets.png` on 64 trajectories
from its replay, at the start of learning (update 40) and at the end, and writes the correlations.

    python results/disco103_catch/disco103_figure.py --weights disco_103.npz --out results/disco103_catch
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.analysis.update_rule_figures import correlation, rule_targets_figure, targets_at
from metadisco.core.io import atomic_write_text
from metadisco.envs import make_env
from metadisco.objectives import UPDATE_RULES, Objective
from metadisco.objectives.disco.agent import PredictionAgent
from metadisco.objectives.disco.weights import load_disco103
from metadisco.trainers import make_trainer
from metadisco.trainers.config import apply_overrides, get_preset


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    updates, early = 600, 40
    config = apply_overrides(get_preset("update_rule_classic"), {"total_timesteps": 2 * 29 * updates,
                                                                 "replay_batch": 32, "hidden_sizes": (64, 64)})
    env = make_env("Catch-bsuite")
    trainer = make_trainer(config, env, Objective(update_rule=UPDATE_RULES.make("disco")))
    network = PredictionAgent(env.spec.action_size, torso=config.hidden_sizes)
    rule_meta = jax.tree.map(jnp.asarray, load_disco103(args.weights))
    meta = {"update_rule": rule_meta}
    step = jax.jit(trainer.step, static_argnums=1)
    state = jax.jit(trainer.init)(jax.random.PRNGKey(args.seed), meta)
    state, first = step(state, early)
    key = jax.random.PRNGKey(1000 + args.seed)
    summary = {}
    for name, stage in (("start", state), ("end", None)):
        if stage is None:
            state, rest = step(state, updates - early)
            stage = state
        targets = targets_at(rule_meta, stage, network, key, 64)
        out = Path(args.out) / name
        out.mkdir(parents=True, exist_ok=True)
        rule_targets_figure(targets, f"Disco103 on Catch-bsuite, update {int(stage.update)}", out)
        summary[name] = {"update": int(stage.update),
                         "policy_shift_vs_advantage": correlation(targets["advantage"], targets["policy_shift"]),
                         "y_component_vs_return": correlation(targets["return"], targets["y_component"])}
    returns = np.concatenate([np.asarray(first.episode_return), np.asarray(rest.episode_return)])
    summary["final_return"] = float(np.nanmean(returns[-60:]))
    atomic_write_text(Path(args.out) / "rule_targets.json", json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
