#!/usr/bin/env bash
# Issue 66, item 3, a MinAtar part this 2-core CPU can run, declared 2026-11-30 before any of it ran.
# The declared plan (../run.sh: 1e6 steps on four MinAtar games) is a GPU job, and no GPU was lent ;
# on these cores it is about three days. This piece is the same plan (same methods, presets, lr grid
# {3e-4, 1e-3, 3e-3, 1e-2} chosen on 16 selection seeds, 16 fresh reported seeds from base seed 2000, 16
# deterministic episodes per agent, the final return as the verdict) on two MinAtar games at 156,250 steps: the
# budget the project's MinAtar objectives were meta-trained and judged at (results/talpo_minatar_tuned), chosen for
# cost alone, before any Disco103 number on MinAtar was seen. Breakout and SpaceInvaders: one of TA-LPO's training
# games and one of its held-out ones (Disco103 saw neither). Estimated from `metadisco bench --update-rule`
# (results/bench/README.md: ~4.7 learner steps/s at 4 seeds on SpaceInvaders): about 25 min a 16-seed Disco103
# call on 2 idle cores, 5-6 calls an env, so two sessions or more; run it after catch_cpu/ finishes, alone, and rerun
# until it prints the table (--resume keeps the cells; commit eval/cells/ between sessions). Its verdict is this
# budget's alone; the 1e6 plan stays the GPU job's.
#   bash results/disco103_judged/minatar_cpu/run.sh [disco_103.npz]
set -euo pipefail
cd "$(dirname "$0")"
PLAN_ENVS=Breakout-MinAtar@156250,SpaceInvaders-MinAtar@156250 PLAN_DIR=results/disco103_judged/minatar_cpu \
  exec bash ../run.sh "$@"
