#!/usr/bin/env bash
# The losses Co-Reyes et al. (ICLR 2021) evolved from DQN's, judged with every method tuned; declared before any of
# it ran. DQNReg (the built-in `dqn_reg`) against DQN, Double DQN (`ddqn`) and DQNClipped (`dqn_clipped`), each at
# its own best lr of {1e-4, 3e-4, 1e-3}, chosen on 16 selection seeds and reported on 16 fresh seeds (base seed 1000),
# with 16 greedy episodes per agent:
#   1. classic control at the dqn_classic preset (PureJaxRL's dqn.py settings): CartPole-v1 and Acrobot-v1 at 2e5;
#   2. MinAtar at the dqn_minatar preset (DiscoBench's OffPolicyRL settings) at 5e5 steps, a twentieth of theirs,
#      with a replay of 50,000 (theirs 300,000) so that 16 seeds' buffers fit in this machine's memory:
#      Breakout, SpaceInvaders, Asterix, Freeway.
# The verdict: P(DQNReg > tuned DQN) and P(DQNReg > tuned Double DQN) with 95% CIs per env, on the final return and
# in greedy play. Resumable: rerun until both judges have printed their tables; eval cells can be committed between
# runs.
#   bash results/dqn_losses/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/dqn_losses
judge() {  # judge FOLDER ENVS [--set ...]
  local folder=$1 envs=$2
  shift 2
  metadisco --no-progress evaluate dqn_reg --baselines dqn,ddqn,dqn_clipped --envs "$envs" --seeds 16 --seed 1000 \
    --tune lr=1e-4,3e-4,1e-3 --eval-episodes 16 --resume "$@" --out "$OUT/$folder" 2>&1 | tee -a "$OUT/$folder.txt"
}
judge eval_classic CartPole-v1@200000,Acrobot-v1@200000
judge eval_minatar Breakout-MinAtar@500000,SpaceInvaders-MinAtar@500000,Asterix-MinAtar@500000,Freeway-MinAtar@500000 \
  --set buffer_size=50000
