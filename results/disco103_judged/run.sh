#!/usr/bin/env bash
# Issue 66, item 3, declared 2026-11-29 before any of it ran: Disco103 judged by the field's rules.
# Disco103 (DeepMind's released update rule, imported unchanged) against PPO and DPO on Catch-bsuite at DeepMind's
# eval-notebook budget (58,000 steps) and on four MinAtar games at 1e6 steps, each method with its own algorithm's
# preset (update_rule_classic / update_rule_minatar for Disco103: DeepMind's 512-512 agent, 64 trajectories of 29
# steps a learner step from a replay of 1024; PPO's classic / minatar for PPO and DPO), every method's lr tuned over
# the same grid {3e-4, 1e-3, 3e-3, 1e-2} (it holds each method's preset lr: 2.5e-4 ~ 3e-4 and 5e-3 for PPO, 1e-2 and
# 3e-4 for Disco103) on 16 selection seeds and reported on 16 fresh seeds (base seed 2000), final return with 16
# deterministic episodes per agent beside it. One Disco103 learner step costs about 0.25 s a seed on this 2-core CPU
# (~4,000 s for one call of 16 seeds on Catch, 7 calls an env), so this runs on a GPU, in resumable pieces:
#   bash results/disco103_judged/run.sh [disco_103.npz]      (rerun until it prints the table; --resume keeps cells)
# PLAN_ENVS and PLAN_DIR, when set, run the same plan on other envs into another folder: the CPU-sized piece declared
# in minatar_cpu/run.sh. Unset, this is the plan as declared. (Not OUT: a device machine sets that.)
# DEVICES, when set, is the device count (render_envs.sh: to resume cells a judge wrote on another count).
set -euo pipefail
cd "$(dirname "$0")/../.."
weights=${1:-../shared/data/disco103/disco_103.npz}
OUT=${PLAN_DIR:-results/disco103_judged}
ENVS=${PLAN_ENVS:-Catch-bsuite@58000,Breakout-MinAtar@1000000,SpaceInvaders-MinAtar@1000000,Asterix-MinAtar@1000000,Freeway-MinAtar@1000000}
RULE=runs/disco103.msgpack  # the imported weights (3 MB, DeepMind's) stay out of the repository: runs/ is ignored
mkdir -p runs
[ -f "$RULE" ] || metadisco import --format disco103 "$weights" --out "$RULE"
${PIECE_TIMEOUT:+timeout --signal=TERM $PIECE_TIMEOUT} metadisco --no-progress ${DEVICES:+--devices $DEVICES} evaluate \
  "disco103=$RULE" --baselines ppo,dpo \
  --envs "$ENVS" \
  --seeds 16 --seed 2000 --tune lr=3e-4,1e-3,3e-3,1e-2 --eval-episodes 16 --resume \
  --out "$OUT/eval" 2>&1 | tee -a "$OUT/eval.txt"
