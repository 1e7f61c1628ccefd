#!/usr/bin/env bash
# Issue 43, item 3: the objective meta-trained by experiments/discobench_split.yaml, scored by DiscoBench's own
# code (discogen 1.3.0: its generated OnPolicyRL task, train.py, networks and main.py's scoring) on the meta-test
# pair, beside PPO and DPO exported the same way. Declared before meta-training finished and before
# any of it ran.
#   bash results/discobench_split/discobench_protocol.sh [WORK_DIR]     (after evaluate.sh made kept.msgpack)
#
# DiscoBench's protocol is 1e7 steps, 10 learning rates linspace(1e-3, 1e-2, 10) x 8 seeds, best lr's mean of 16
# deterministic episodes per agent (chosen and reported on the same seeds). Here, at a reduced budget affordable
# on 2 CPU cores (about 40 min): 1e6 steps, 4 seeds, 3 of its 10 learning rates (indices 1, 4, 9: 2e-3, 5e-3,
# 1e-2, the nearest to metadisco's tuning grid), its keys (PRNGKey(30) and (42)), one agent at a time (its vmapped
# tuner hangs on jax 0.10.2's CPU runtime: REFERENCE.md section 12). Every method gets the same grid.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${1:-/tmp/discobench_split_protocol}"
OUT="$ROOT/results/discobench_split"
[ -f "$OUT/kept.msgpack" ] || { echo "no $OUT/kept.msgpack: run results/discobench_split/evaluate.sh first" >&2; exit 2; }
rm -f "$WORK/discobench.log"
OBJECTIVES="kept=$OUT/kept.msgpack ppo dpo" ENVS="MinAtar/Asterix MinAtar/SpaceInvaders" TIMESTEPS=1000000 \
  SEEDS=4 LR_INDICES="1 4 9" COMPARE=0 bash "$ROOT/results/discobench/export_check.sh" "$WORK"
cp "$WORK/discobench.log" "$OUT/discobench_protocol.log"
"$ROOT/.venv/bin/python" "$OUT/protocol_table.py" "$OUT/discobench_protocol.log" | tee "$OUT/discobench_protocol.txt"
