#!/usr/bin/env bash
# Issue 66, item 3, its Catch part on this 2-core CPU, declared 2026-11-29 (session 45) before any of it ran. The
# plan of ../run.sh restricted to Catch-bsuite, unchanged otherwise: Disco103 (DeepMind's released update rule,
# imported unchanged) against PPO and DPO at DeepMind's eval-notebook budget (58,000 steps), each method with its
# own algorithm's preset (update_rule_classic for Disco103; classic for PPO and DPO), every method's lr tuned over
# {3e-4, 1e-3, 3e-3, 1e-2} on 16 selection seeds and reported on 16 fresh seeds (base seed 2000), final return with
# 16 deterministic episodes per agent beside it. The verdict: P(Disco103 > tuned PPO) and P(Disco103 > tuned DPO)
# on the final return. Its own folder: CPU cells are not mixed with the GPU run's. About 45 min a Disco103 call of 16
# seeds on 2 idle cores, 5-6 such calls: run it over sessions, rerun until it prints the table (--resume keeps the
# cells; commit eval/cells/ between sessions):
#   bash results/disco103_judged/catch_cpu/run.sh [disco_103.npz]
set -euo pipefail
cd "$(dirname "$0")/../../.."
weights=${1:-../shared/data/disco103/disco_103.npz}
OUT=results/disco103_judged/catch_cpu
RULE=runs/disco103.msgpack  # the imported weights (3 MB, DeepMind's) stay out of the repository: runs/ is ignored
mkdir -p runs
[ -f "$RULE" ] || metadisco import --format disco103 "$weights" --out "$RULE"
metadisco --no-progress evaluate "disco103=$RULE" --baselines ppo,dpo --envs Catch-bsuite@58000 \
  --seeds 16 --seed 2000 --tune lr=3e-4,1e-3,3e-3,1e-2 --eval-episodes 16 --resume \
  --out "$OUT/eval" 2>&1 | tee -a "$OUT/eval.txt"
