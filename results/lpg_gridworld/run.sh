#!/usr/bin/env bash
# Issue 66, item 4, declared 2026-11-29 before it ran: TA-LPG evolved on LPG's gridworlds
# (experiments/lpg_gridworld.yaml), then judged on envs it never saw: gridworld/rand_dense, gridworld/long and
# gridworld/rand_long at the training length (65,536 steps) and Breakout-MinAtar at 500,000, against PPO. Both train
# the same agent on the same data per update (two 64-64 tanh towers, 8 envs x 20 steps; PPO's other settings its
# presets', 4 epochs x 4 minibatches an update), and each method's lr is tuned over {2.5e-4, 1e-3, 4e-3} (the range
# meta-training drew from) on 16 selection seeds and reported on 16 fresh ones (base seed 3000), final return with 16
# deterministic episodes per agent beside it. The final ES mean is judged (no validation).
#   bash results/lpg_gridworld/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/lpg_gridworld
metadisco --no-progress meta-train experiments/lpg_gridworld.yaml --out "$OUT/run" \
  $( [ -d "$OUT/run/checkpoints" ] && echo --resume) 2>&1 | tee -a "$OUT/run.txt"
AGENT=(--set num_envs=8 --set num_steps=20 --set replay_capacity=8 --set replay_batch=8 --set hidden_sizes=64,64
       --set activation=tanh --set gamma=0.99)
# The gridworlds and Breakout are two evaluations (split before either ran, so that the gridworlds'
# table does not wait on Breakout's longer runs): the same methods, seeds, grid and settings as one would have.
for part in gridworld breakout; do
  envs=gridworld/rand_dense@65536,gridworld/long@65536,gridworld/rand_long@65536
  [ "$part" = breakout ] && envs=Breakout-MinAtar@500000
  metadisco --no-progress evaluate "talpg=$OUT/run/objective.msgpack" --baselines ppo --envs "$envs" \
    --seeds 16 --seed 3000 --tune lr=2.5e-4,1e-3,4e-3 --eval-episodes 16 "${AGENT[@]}" --resume \
    --out "$OUT/eval_held_out_$part" 2>&1 | tee "$OUT/eval_held_out_$part.txt"
done
