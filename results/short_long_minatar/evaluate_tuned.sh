#!/usr/bin/env bash
# Issue 42, item 4: does the flagship held-out result hold when every method's learning rate is tuned?
# Declared before it ran. The kept TA-LPO drift against PPO and DPO on the held-out regime where the
# README claims its gain (SpaceInvaders-MinAtar at 156,250 steps; the 625,000-step regime is left for a later
# session: its untuned evaluation alone took 12 min here, tuned about 1 hour), 16 seeds, base seed 1000 (the
# reported seeds are those of eval_held_out), each method's lr tuned over {2.5e-3, 5e-3, 1e-2} (the preset's 5e-3
# in the middle) on 16 selection seeds of their own (the honest rule: chosen on other seeds than reported), every
# method with the same grid. Scored on the final return (the committed claim's score) with 16 deterministic
# episodes per agent recorded beside it (DiscoBench's score; P(improvement) is printed on both).
#   bash results/short_long_minatar/evaluate_tuned.sh          (about 20 min alone on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/short_long_minatar
metadisco evaluate "kept=$OUT/kept.msgpack" --baselines ppo,dpo --envs SpaceInvaders-MinAtar@156250 \
  --seeds 16 --seed 1000 --tune lr=2.5e-3,5e-3,1e-2 --eval-episodes 16 --no-progress "$@" \
  --out "$OUT/eval_held_out_tuned" 2>&1 | tee "$OUT/eval_held_out_tuned.txt"
