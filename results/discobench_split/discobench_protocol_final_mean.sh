#!/usr/bin/env bash
# Issue 43, item 3, for the final ES mean: declared 2026-11-27, after evaluate_final_mean.sh judged it (it lost to
# tuned PPO and DPO on the meta-test pair) and before this ran. The kept objective is PPO itself (validation never
# kept a later mean), so discobench_protocol.sh, declared for it, would score PPO against itself; this runs the
# same protocol on final_mean.msgpack instead, so DiscoBench's own code gives its verdict on what the ES found.
# Everything but the objective is discobench_protocol.sh's: DiscoBench's generated OnPolicyRL task (discogen
# 1.3.0; only loss.py replaced by metadisco's export), MinAtar/Asterix and MinAtar/SpaceInvaders, 1e6 steps (its
# protocol: 1e7), 4 seeds (its: 8), 3 of its 10 learning rates (indices 1, 4, 9: 2e-3, 5e-3, 1e-2), its keys
# (PRNGKey(30), eval PRNGKey(42)), 16 deterministic episodes per agent, best lr chosen on the scored seeds (its
# rule), one agent at a time; PPO and DPO exported and run the same way.
#   bash results/discobench_split/discobench_protocol_final_mean.sh [WORK_DIR]      (about an hour here)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${1:-/tmp/discobench_split_protocol_final_mean}"
OUT="$ROOT/results/discobench_split"
[ -f "$OUT/final_mean.msgpack" ] || { echo "no $OUT/final_mean.msgpack: run evaluate_final_mean.sh first" >&2; exit 2; }
rm -f "$WORK/discobench.log"
OBJECTIVES="final_mean=$OUT/final_mean.msgpack ppo dpo" ENVS="MinAtar/Asterix MinAtar/SpaceInvaders" \
  TIMESTEPS=1000000 SEEDS=4 LR_INDICES="1 4 9" COMPARE=0 bash "$ROOT/results/discobench/export_check.sh" "$WORK"
cp "$WORK/discobench.log" "$OUT/discobench_protocol_final_mean.log"
"$ROOT/.venv/bin/python" "$OUT/protocol_table.py" "$OUT/discobench_protocol_final_mean.log" \
  | tee "$OUT/discobench_protocol_final_mean.txt"
