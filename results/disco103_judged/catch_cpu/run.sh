#!/usr/bin/env bash
# Issue 66, item 3, its Catch part on this 2-core CPU, declared 2026-11-29 before any of it ran. The
# plan of ../run.sh restricted to Catch-bsuite, unchanged otherwise: Disco103 (DeepMind's released update rule,
# imported unchanged) against PPO and DPO at DeepMind's eval-notebook budget (58,000 steps), each method with its
# own algorithm's preset (update_rule_classic for Disco103; classic for PPO and DPO), every method's lr tuned over
# {3e-4, 1e-3, 3e-3, 1e-2} on 16 selection seeds and reported on 16 fresh seeds (base seed 2000), final return with
# 16 deterministic episodes per agent beside it. The verdict: P(Disco103 > tuned PPO) and P(Disco103 > tuned DPO)
# on the final return. Its own folder: CPU cells are not mixed with the GPU run's. About 45 min a Disco103 call of 16
# seeds on 2 idle cores, 5-6 such calls: run it in parts, rerun until it prints the table (--resume keeps the
# cells; commit eval/cells/ between parts):
#   bash results/disco103_judged/catch_cpu/run.sh [disco_103.npz]
# (Written as ../run.sh with PLAN_ENVS / PLAN_DIR, the same command as the lines it had; about 105
# CPU-minutes a Disco103 call was measured, not 45.)
set -euo pipefail
cd "$(dirname "$0")"
PLAN_ENVS=Catch-bsuite@58000 PLAN_DIR=results/disco103_judged/catch_cpu exec bash ../run.sh "$@"
