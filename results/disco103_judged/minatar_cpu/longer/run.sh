#!/usr/bin/env bash
# A diagnostic beside the MinAtar judge, declared 2026-11-30 before it ran; it chooses nothing.
# The judge (../run.sh) found Disco103 at the random policy's return on Breakout at 156,250 steps at every lr of the
# grid: a flat curve from the first update to the last. 156,250 steps at 16 envs x 29 steps are 337 learner steps;
# on Catch (results/disco103_catch, catch_cpu) Disco103 plays at chance for its first ~500 learner steps at lr 1e-2
# and does not learn within 1,000 at lr <= 1e-3. Question: is the flat curve the budget (too few learner steps), or
# does Disco103 not learn Breakout with this agent at all? Disco103 on Breakout at the declared plan's 1e6 steps
# (2,155 learner steps), lr 1e-2 (its Catch lr, where it takes off soonest), 2 seeds from base seed 0 (neither the
# judge's reported nor its selection seeds). About 20 min on 2 idle cores. Not a verdict: 2 seeds, one lr, untuned
# baselines absent; the judge's table stays the result.
#   bash results/disco103_judged/minatar_cpu/longer/run.sh [disco_103.npz]
set -euo pipefail
cd "$(dirname "$0")/../../../.."
weights=${1:-../shared/data/disco103/disco_103.npz}
RULE=runs/disco103.msgpack
mkdir -p runs
[ -f "$RULE" ] || metadisco import --format disco103 "$weights" --out "$RULE"
OUT=results/disco103_judged/minatar_cpu/longer
metadisco --no-progress train --objective "$RULE" --env Breakout-MinAtar --timesteps 1000000 --seeds 2 --seed 0 \
  --set lr=1e-2 --out "$OUT/breakout_lr1e-2_1e6" 2>&1 | tee "$OUT/breakout_lr1e-2_1e6.txt"
