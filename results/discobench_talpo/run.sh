#!/usr/bin/env bash
# Issue 63, item 4: the TA-LPO drifts that hold under tuning, judged by DiscoBench's own code. Declared
# before any of it ran.
#
# Methods (each exported with `metadisco export --format discobench`, or DiscoBench's own file):
#   ppo    DiscoBench's baseline loss.py, unchanged (DiscoBench's PPO)
#   kept   results/short_long_minatar/kept.msgpack: the kept TA-LPO drift ("TA-LPO within MinAtar"), meta-trained
#          at the preset's lr on Asterix and Breakout
#   tuned  results/talpo_minatar_tuned/run/objective.msgpack: the TA-LPO drift meta-trained with tuned fitness on
#          Asterix and Breakout (the item names the kept one, so it runs after: `METHODS="ppo kept" bash run.sh`
#          over the whole grid first, then `bash run.sh`, whose ppo and kept units exist)
#   greedy   results/talpo_greedy/run/objective.msgpack: the floored TA-LPO drift meta-trained on greedy play
#            (deterministic episodes at each member's best lr; issue 78, item 1), on the same tasks (Asterix,
#            Breakout); declared after the table above was read, run with `METHODS="greedy" bash run.sh` over the
#            same grid, seeds and keys (ppo's units exist)
#   floored  results/talpo_floor/run/objective.msgpack: the floored drift meta-trained on the final return, the one
#            discovery that held under metadisco's tuned judge; declared with greedy, run after it
#            (`METHODS="floored" bash run.sh`)
# Task: DiscoBench's OnPolicyRL task with the loss and the training loop editable (change_loss and change_train,
#   `discogen create-task --use-base`: every module DiscoBench's baseline), one edit of its train.py that every
#   method shares: the loss's config carries the update fraction n / N (the drifts read it; PPO's loss does not).
# Protocol: DiscoBench's main.py, at 1e6 steps instead of its 1e7 (a 2-core CPU): MinAtar/Asterix and
#   MinAtar/SpaceInvaders (its meta-test envs; Asterix is one both drifts trained on, SpaceInvaders neither did),
#   its MinAtar config, its 10 learning rates linspace(1e-3, 1e-2, 10), its 8 seeds and keys (PRNGKey(30) split
#   into seeds, each split over the 10 lrs; eval PRNGKey(42)), 16 deterministic episodes per agent; per method and
#   env the lr with the best mean deterministic return over the 8 seeds, reported on the same seeds (its rule).
#   P(method > ppo) per env at each one's best lr, with a 95% bootstrap CI (table.py).
# Agents train one (seed, lr) at a time, because DiscoBench's vmapped tuner hangs on jax 0.10.2's CPU runtime
# (REFERENCE.md section 12); two worker processes share the units (one unit: a method, an env, an lr, 8 seeds).
# Each unit's record is its own file in units/, written atomically; a rerun skips the units that exist, so the run
# resumes across interruptions. Units run lr-major (every method and env at lr 1 before lr 2), so that a partial run
# has compared the same grid for every method.
#
#   bash results/discobench_talpo/run.sh [WORK_DIR]         then   python results/discobench_talpo/table.py
#   env: WORKERS (2), TIMESTEPS (1000000), SEEDS (8), METHODS ("ppo kept tuned"), ENVS, LR_INDICES ("0 ... 9"),
#        UNITS (results/discobench_talpo/units; table.md beside it)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$ROOT/results/discobench_talpo"
WORK="${1:-/tmp/discobench_talpo}"
WORKERS="${WORKERS:-2}"
TIMESTEPS="${TIMESTEPS:-1000000}"
SEEDS="${SEEDS:-8}"
METHODS="${METHODS:-ppo kept tuned}"
ENVS="${ENVS:-MinAtar/Asterix MinAtar/SpaceInvaders}"
LR_INDICES="${LR_INDICES:-0 1 2 3 4 5 6 7 8 9}"
UNITS="${UNITS:-$OUT/units}"  # another folder for a trial at other settings
declare -A OBJECTIVE=([kept]="$ROOT/results/short_long_minatar/kept.msgpack"
                      [tuned]="$ROOT/results/talpo_minatar_tuned/run/objective.msgpack"
                      [greedy]="$ROOT/results/talpo_greedy/run/objective.msgpack"
                      [floored]="$ROOT/results/talpo_floor/run/objective.msgpack")
PY312="${PY312:-$(ls -d "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python 2>/dev/null | head -1)}"
PY312="${PY312:-$(command -v python3.12)}"
mkdir -p "$WORK" "$UNITS"

# 1. DiscoBench (discogen 1.3.0) in a Python 3.12 environment with metadisco's pins of the JAX stack over it
#    (constraints.txt's: chex and distrax, which DiscoBench's task code imports, are not metadisco's dependencies).
if [ ! -x "$WORK/venv/bin/discogen" ]; then
  "$PY312" -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q "discogen==1.3.0"
fi
"$WORK/venv/bin/pip" install -q $(grep -E '^(jax|jaxlib|flax|optax|chex|gymnax|distrax|brax|six)==' "$ROOT/constraints.txt")

# 2. One task per method; the drifts' exported loss.py replaces the baseline's; the one train.py edit for all.
IDS=$(for e in $ENVS; do printf '%s, ' "$e"; done | sed 's/, $//')
for method in $METHODS; do
  task="$WORK/task_$method"
  [ -d "$task" ] && continue
  cat > "$WORK/config_$method.yaml" <<YAML
train_task_id: [$IDS]
test_task_id: [$IDS]
source_path: $task
template_backend: default
change_optim: false
change_loss: true
change_networks: false
change_train: true
change_activation: false
change_targets: false
change_schedule: false
YAML
  (cd "$WORK" && "$WORK/venv/bin/discogen" create-task --task-domain OnPolicyRL \
      --config-path "$WORK/config_$method.yaml" --use-base)
  if [ "$method" != ppo ]; then
    "$ROOT/.venv/bin/metadisco" export "${OBJECTIVE[$method]}" --format discobench --out "$WORK/export/$method"
    cp "$WORK/export/$method/loss.py" "$task/discovered/loss.py"
  fi
  "$ROOT/.venv/bin/python" "$OUT/edit_train.py" "$task/discovered/train.py"
done

# 3. The units, lr-major, dealt round-robin to the workers; each worker trains its units one after another.
units=()
for lr_index in $LR_INDICES; do
  for env in $ENVS; do
    for method in $METHODS; do units+=("$method $env $lr_index"); done
  done
done
worker() {
  local k="$1" i=0
  for unit in "${units[@]}"; do
    if [ $((i % WORKERS)) -eq "$k" ]; then
      read -r method env lr_index <<< "$unit"
      name="${method}_${env#MinAtar/}_lr${lr_index}.json"
      if [ ! -f "$UNITS/$name" ]; then
        (cd "$WORK/task_$method/$env" && PYTHONPATH=. "$WORK/venv/bin/python" "$OUT/unit.py" "$TIMESTEPS" "$SEEDS" "$lr_index" \
            "$method" "$env" "$UNITS/$name")
      fi
    fi
    i=$((i + 1))
  done
}
pids=()
for k in $(seq 0 $((WORKERS - 1))); do worker "$k" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid"; done
"$ROOT/.venv/bin/python" "$OUT/table.py" "$UNITS" | tee "$UNITS/../table.md"
