#!/usr/bin/env bash
# Issue 43: a secondary judging, declared 2026-11-26 after meta-training ended and before this ran. Validation
# never scored the ES mean above PPO (Seaquest @ 625k: 0.89, 0.69, 0.72 at generations 19, 39, 59), so the kept
# objective (objective_best.msgpack) is generation 0's mean, PPO exactly, and evaluate.sh would judge PPO against
# itself (every number equal to PPO's). This judges the final ES mean instead (objective.msgpack: +51% over PPO on
# fresh seeds of the training tasks), by evaluate.sh's first step unchanged: the meta-test pair at 625k, against
# PPO and DPO, every method's lr tuned over {2.5e-3, 5e-3, 1e-2} on 16 selection seeds of its own (fresh_seeds),
# 16 reported seeds (base seed 1000), final return with 16 deterministic episodes per agent recorded. It is not
# the method the recipe declared (validation would not have kept it); it answers whether what the ES found on
# Breakout and Freeway transfers to DiscoBench's meta-test pair.
#   bash results/discobench_split/evaluate_final_mean.sh [RUN_DIR]      (resumable: --resume)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN=${1:-results/discobench_split/run}
OUT=results/discobench_split
cp "$RUN/objective.msgpack" "$OUT/final_mean.msgpack"
metadisco evaluate "final_mean=$OUT/final_mean.msgpack" --baselines ppo,dpo \
  --envs Asterix-MinAtar@625000,SpaceInvaders-MinAtar@625000 --seeds 16 --seed 1000 \
  --tune lr=2.5e-3,5e-3,1e-2 --eval-episodes 16 --no-progress --resume --out "$OUT/eval_final_mean" 2>&1 \
  | tee "$OUT/eval_final_mean.txt"
