#!/usr/bin/env bash
# Cross-check of `metadisco export --format discobench` (issue 42, item 3): DiscoBench's own generated OnPolicyRL
# task (discogen 1.3.0, its train.py, networks.py, targets.py and main.py's evaluation) trains PPO and DPO as
# exported by metadisco, and `metadisco evaluate` trains the same objectives at the same settings; their
# deterministic-episode scores (16 episodes of the policy's mode per agent, DiscoBench's score) should agree
# within the CIs.
#
# Reduced budget, declared here before any run:
#   envs     MinAtar/Breakout and MinAtar/SpaceInvaders (DiscoBench's ids; metadisco's Breakout-MinAtar, ...)
#   budget   TIMESTEPS=1,000,000 env steps per agent (DiscoBench's protocol: 1e7), SEEDS=4 seeds (its: 8),
#            one learning rate, LR_INDEX=4 of DiscoBench's grid linspace(1e-3, 1e-2, 10), i.e. 5e-3 (its: all 10)
#   other    DiscoBench's MinAtar config otherwise (64 envs x 128 steps, 4 epochs x 8 minibatches, relu 64x64,
#            Adam eps 1e-5, annealed), which is metadisco's `minatar` preset
# Keys: DiscoBench's own (PRNGKey(30) split into seeds, each seed's key split over the 10 learning rates, the
# chosen one's subkey used; eval key PRNGKey(42)). Each agent is trained on its own, one seed and one learning
# rate at a time: DiscoBench's main.py vmaps train over seeds and learning rates, which compiles and then hangs on
# jax 0.10.2's CPU runtime (REFERENCE.md section 12).
#
# Usage: results/discobench/export_check.sh [WORK_DIR]
#   env: TIMESTEPS, SEEDS, LR_INDEX (or LR_INDICES, several: each trains every seed), ENVS, PY312,
#        OBJECTIVES (default "ppo dpo"; NAME=FILE for an objective file), COMPARE=0 to stop after DiscoBench's
#        runs (results/discobench_split/discobench_protocol.sh uses it so)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${1:-/tmp/discobench_export_check}"
TIMESTEPS="${TIMESTEPS:-1000000}"
SEEDS="${SEEDS:-4}"
LR_INDEX="${LR_INDEX:-4}"
LR_INDICES="${LR_INDICES:-$LR_INDEX}"
OBJECTIVES="${OBJECTIVES:-ppo dpo}"
COMPARE="${COMPARE:-1}"
ENVS="${ENVS:-MinAtar/Breakout MinAtar/SpaceInvaders}"
# pyenv's 3.12 first: a pyenv shim named python3.12 exists even where that version is not selected, and fails.
PY312="${PY312:-$(ls -d "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python 2>/dev/null | head -1)}"
PY312="${PY312:-$(command -v python3.12)}"
METADISCO="$ROOT/.venv/bin/metadisco"
mkdir -p "$WORK"

# 1. DiscoBench in a Python 3.12 environment, with metadisco's own pins of the JAX stack installed over it (its
#    generated requirements.txt pins older ones, which are not needed; its wrappers.py imports brax, so brax too).
if [ ! -x "$WORK/venv/bin/python" ]; then
  "$PY312" -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q "discogen==1.3.0"
  "$WORK/venv/bin/pip" install -q $("$ROOT/.venv/bin/pip" freeze | grep -E '^(jax|jaxlib|flax|optax|chex|gymnax|distrax|brax|six)==')
fi

LR=$("$WORK/venv/bin/python" -c "import numpy as np; print(float(np.linspace(1e-3, 1e-2, 10)[$LR_INDEX]))")
IDS=$(for e in $ENVS; do printf '%s, ' "$e"; done | sed 's/, $//')

# 2. One task per objective: only loss.py editable, every other module DiscoBench's baseline (--use-base); the
#    exported loss.py replaces the editable one.
for spec in $OBJECTIVES; do
  objective="${spec%%=*}"
  "$METADISCO" export "${spec#*=}" --format discobench --out "$WORK/export/$objective"
  task="$WORK/task_$objective"
  cat > "$WORK/config_$objective.yaml" <<YAML
train_task_id: [$IDS]
test_task_id: [$IDS]
source_path: $task
template_backend: default
change_optim: false
change_loss: true
change_networks: false
change_train: false
change_activation: false
change_targets: false
YAML
  (cd "$WORK" && "$WORK/venv/bin/discogen" create-task --task-domain OnPolicyRL \
      --config-path "$WORK/config_$objective.yaml" --use-base)
  cp "$WORK/export/$objective/loss.py" "$task/discovered/loss.py"
done

# 3. DiscoBench's training and evaluation, one agent at a time, with the keys its main.py would give it.
cat > "$WORK/one_agent_at_a_time.py" <<'PY'
"""Train and score agents of a DiscoBench OnPolicyRL task dir (the current directory) one at a time."""
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

from config import config
from main import make_eval
from train import make_train

timesteps, seeds, lr_index = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
config["TOTAL_TIMESTEPS"] = timesteps
lrs = jnp.linspace(config["LR"], config["LR"] * 10, 10)
train = jax.jit(make_train(config))
evaluate = jax.jit(make_eval(config, 16))
one = lambda tree: jax.tree.map(lambda x: x[None], tree)  # make_eval maps over a learning-rate axis
out = {"lr": float(lrs[lr_index]), "timesteps": timesteps, "train_return": [], "eval_return": []}
for seed_key in jax.random.split(jax.random.PRNGKey(30), seeds):
    result = train(jax.random.split(seed_key, len(lrs))[lr_index], lrs[lr_index])
    returns = np.asarray(result["metrics"]["mean_training_return"])
    out["train_return"].append(float(np.nanmean(returns[int(len(returns) * 0.95):])))
    params, env_state = result["runner_state"][0].params, result["runner_state"][1]
    out["eval_return"].append(float(np.mean(evaluate(one(params), jax.random.PRNGKey(42), one(env_state)))))
    print(json.dumps(out), flush=True)
PY

for spec in $OBJECTIVES; do
  objective="${spec%%=*}"
  for env in $ENVS; do
    dir="$WORK/task_$objective/$env"
    cp "$WORK/one_agent_at_a_time.py" "$dir/"
    for lr_index in $LR_INDICES; do
      echo "== DiscoBench task, $objective, $env" | tee -a "$WORK/discobench.log"
      (cd "$dir" && "$WORK/venv/bin/python" one_agent_at_a_time.py "$TIMESTEPS" "$SEEDS" "$lr_index") \
        | tail -1 | tee -a "$WORK/discobench.log"
    done
  done
done
[ "$COMPARE" = 1 ] || exit 0

# 4. metadisco's own evaluation at the same settings (its minatar preset is DiscoBench's config), scored the same
#    way: 16 deterministic episodes per trained agent.
METADISCO_ENVS=$(for e in $ENVS; do printf '%s-MinAtar,' "${e#MinAtar/}"; done | sed 's/,$//')
"$METADISCO" evaluate ppo --envs "$METADISCO_ENVS" --seeds "$SEEDS" --timesteps "$TIMESTEPS" --baselines dpo \
  --set "lr=$LR" --score eval_return --out "$WORK/metadisco_eval" | tee "$WORK/metadisco_eval.log"

# 5. The record (results/discobench/): both logs, metadisco's tables, and the comparison per env and method.
OUT="$ROOT/results/discobench"
cp "$WORK/discobench.log" "$OUT/discobench.log"
cp "$WORK/metadisco_eval/eval.json" "$WORK/metadisco_eval/eval.md" "$OUT/"
"$ROOT/.venv/bin/python" "$OUT/compare.py" "$OUT/discobench.log" "$OUT/eval.json" | tee "$OUT/compare.txt"
