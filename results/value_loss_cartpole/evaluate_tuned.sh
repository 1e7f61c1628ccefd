#!/usr/bin/env bash
# Issue 42, item 4: the learned value loss re-judged with every method's learning rate tuned (the field's rule).
# Declared 2026-11-26, before it ran. The learned loss (learned.msgpack, the run's final ES mean) against L2 (its
# zero point) and PPO's clipped L2, each at its own best lr of {1e-4, 2.5e-4, 5e-4, 1e-3} (the CartPole preset's
# 2.5e-4 and the points a factor 2-2.5 either side), chosen on 32 selection seeds of its own and reported on 32
# fresh seeds (base seed 1000, fresh_seeds: the honest rule), at the meta-training budget (65,536 steps), scored on
# the run's fitness (area under the curve, mean_return) with the final return reported beside it.
#   bash results/value_loss_cartpole/evaluate_tuned.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/value_loss_cartpole
metadisco evaluate "learned=$OUT/learned.msgpack" --baselines "l2=$OUT/l2.msgpack,ppo" --envs CartPole-v1@65536 \
  --seeds 32 --seed 1000 --score mean_return --tune lr=1e-4,2.5e-4,5e-4,1e-3 --no-progress --resume \
  --out "$OUT/eval_1x_tuned" 2>&1 | tee "$OUT/eval_1x_tuned.txt"
# Step 2, added 2026-11-26 after step 1 chose the grid's top (1e-3) for all three methods, before it ran: the same
# evaluation on a grid that continues upward, {1e-3, 2.5e-3, 5e-3, 1e-2}, in its own directory.
metadisco evaluate "learned=$OUT/learned.msgpack" --baselines "l2=$OUT/l2.msgpack,ppo" --envs CartPole-v1@65536 \
  --seeds 32 --seed 1000 --score mean_return --tune lr=1e-3,2.5e-3,5e-3,1e-2 --no-progress --resume \
  --out "$OUT/eval_1x_tuned_high" 2>&1 | tee "$OUT/eval_1x_tuned_high.txt"
