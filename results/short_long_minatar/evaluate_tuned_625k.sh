#!/usr/bin/env bash
# Issue 42, item 4, the regime evaluate_tuned.sh left out: the kept TA-LPO drift against PPO and DPO on the held-out
# env at 625,000 steps (4x the longest meta-training run; the README's second held-out claim), every method's lr
# tuned. Declared before it ran, with evaluate_tuned.sh's settings unchanged but the budget: the
# 16 reported seeds of eval_held_out at this budget (base seed 1000), each method's lr tuned over
# {2.5e-3, 5e-3, 1e-2} on 16 selection seeds of its own (fresh_seeds), final return scored with 16 deterministic
# episodes per agent recorded (P(improvement) printed on both). Resumable (--resume).
#   bash results/short_long_minatar/evaluate_tuned_625k.sh          (about 1 h alone on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/short_long_minatar
metadisco evaluate "kept=$OUT/kept.msgpack" --baselines ppo,dpo --envs SpaceInvaders-MinAtar@625000 \
  --seeds 16 --seed 1000 --tune lr=2.5e-3,5e-3,1e-2 --eval-episodes 16 --no-progress --resume "$@" \
  --out "$OUT/eval_held_out_625k_tuned" 2>&1 | tee "$OUT/eval_held_out_625k_tuned.txt"
