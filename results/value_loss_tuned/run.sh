#!/usr/bin/env bash
# Issue 63, items 2-3 (declared 2026-11-28, before it ran): does a learned value loss meta-trained for the judge
# beat L2 once every method's learning rate is tuned? Two rules of meta-training, then one judge.
#   1. grid:  experiments/value_loss_cartpole_tuned.yaml (each member at its best of 4 lrs, 20 generations)
#   2. drawn: experiments/value_loss_cartpole_drawn.yaml (one lr drawn per generation, 20 generations: 1/4 the compute)
#   3. the judge: each run's final ES mean (objective.msgpack; the selection rule, fixed now), and the quickstart's
#      untuned ES mean (results/quickstart/objective.msgpack, 20 generations at the preset's lr) for reference,
#      against L2 (the value loss at zero) and PPO's clipped L2, every method at its own best lr of
#      {1e-3, 2.5e-3, 5e-3, 1e-2}, chosen on 32 selection seeds and reported on 32 fresh seeds (base seed 1000,
#      fresh_seeds rule), CartPole-v1 at the meta-training budget (65,536 steps), scored on the fitness (area under
#      the curve, mean_return) with the final return beside it. Then the held-out envs of the recipe, tuned alike.
#   bash results/value_loss_tuned/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/value_loss_tuned
GRID=lr=1e-3,2.5e-3,5e-3,1e-2
for rule in drawn grid; do
  config=experiments/value_loss_cartpole_tuned.yaml
  [ "$rule" = drawn ] && config=experiments/value_loss_cartpole_drawn.yaml
  metadisco --no-progress meta-train "$config" --out "$OUT/$rule" $( [ -d "$OUT/$rule/checkpoints" ] && echo --resume ) \
    2>&1 | tee -a "$OUT/$rule.txt"
done
metadisco --no-progress evaluate "grid=$OUT/grid/objective.msgpack" \
  --baselines "drawn=$OUT/drawn/objective.msgpack,untuned=results/quickstart/objective.msgpack,l2=results/value_loss_cartpole/l2.msgpack,ppo" \
  --envs CartPole-v1@65536 --seeds 32 --seed 1000 --score mean_return --tune "$GRID" --resume \
  --out "$OUT/eval_tuned" 2>&1 | tee "$OUT/eval_tuned.txt"
# Step 2, declared 2026-11-28 after step 1 chose the grid's top (1e-2) for four of the five methods, before it ran:
# the same judge on a grid that continues upward, {1e-2, 2e-2, 4e-2}, in its own directory, for the two learned
# losses, L2 and PPO (whether L2's gain continues past the grid the learned losses were meta-trained on).
metadisco --no-progress evaluate "grid=$OUT/grid/objective.msgpack" \
  --baselines "drawn=$OUT/drawn/objective.msgpack,l2=results/value_loss_cartpole/l2.msgpack,ppo" \
  --envs CartPole-v1@65536 --seeds 32 --seed 1000 --score mean_return --tune lr=1e-2,2e-2,4e-2 --resume \
  --out "$OUT/eval_tuned_high" 2>&1 | tee "$OUT/eval_tuned_high.txt"
