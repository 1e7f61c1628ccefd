#!/usr/bin/env bash
# The DQN-loss campaign, declared before any of it ran: meta-train the learnable TD loss on classic control
# (experiments/dqn_loss_classic.yaml), then judge its final ES mean on envs it never saw against DQN, Double DQN and
# DQNReg, every method at its own best lr of {1e-4, 3e-4, 1e-3} chosen on 16 selection seeds and reported on 16 fresh
# seeds (base seed 1000), 16 deterministic episodes per agent: MountainCar-v0 at 2e5, Breakout-MinAtar and
# SpaceInvaders-MinAtar at 5e5 (a replay of 50,000 transitions there, as results/dqn_losses/ judges at).
# The verdict: P(learned TD loss > tuned DQN) and P(> DQNReg) per env, final return and greedy play. Resumable:
# rerun until the judge has printed its tables.
#   bash results/dqn_loss_campaign/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/dqn_loss_campaign
metadisco --no-progress meta-train experiments/dqn_loss_classic.yaml --out "$OUT/run" \
  $( [ -d "$OUT/run/checkpoints" ] && echo --resume ) 2>&1 | tee -a "$OUT/run.txt"
judge() {  # judge FOLDER ENVS [--set ...]
  local folder=$1 envs=$2
  shift 2
  metadisco --no-progress evaluate "learned_td=$OUT/run/objective.msgpack" --baselines dqn,ddqn,dqn_reg \
    --envs "$envs" --seeds 16 --seed 1000 --tune lr=1e-4,3e-4,1e-3 --eval-episodes 16 --resume "$@" \
    --out "$OUT/$folder" 2>&1 | tee -a "$OUT/$folder.txt"
}
judge eval_classic MountainCar-v0@200000
judge eval_minatar Breakout-MinAtar@500000,SpaceInvaders-MinAtar@500000 --set buffer_size=50000
