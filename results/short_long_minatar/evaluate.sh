#!/usr/bin/env bash
# Issue 30, item 3: how the kept objective is judged. Declared while meta-training was at
# generation 37 of 60, before any of it ran and before the kept objective existed.
#   bash results/short_long_minatar/evaluate.sh [RUN_DIR]       (default: results/short_long_minatar/run)
#
# kept: the ES mean that validation kept (objective_best.msgpack; Freeway + Seaquest at 625k), else the final mean.
# 1. Held out (the run's held_out_envs, never trained or validated on): SpaceInvaders-MinAtar at 156,250 steps
#    (where DPO beats PPO on the calibration map) and 625,000 (where it loses), 16 fresh seeds (base seed 1000;
#    meta-training drew from seed 0), kept vs PPO and DPO on the same seeds; P(kept > PPO) beside P(DPO > PPO).
# 2. Horizon: Breakout-MinAtar (a training env) at 1x, 4x and 16x the longest meta-training length (156,250 ->
#    625,000 -> 2,500,000 steps), kept vs PPO: 16 seeds at 1x and 4x, 8 at 16x (changed before it ran, to fit the
#    session: 16 seeds at 2.5M steps would take about 40 min here).
# 3. Pictures and closed forms: the drift beside PPO and DPO, and its parametric and symbolic distillations.
# 4. (Added after step 1's result, before step 4 ran, when the parametric fit came out as PPO's clip at eps 0.27,
#    R^2 0.998.) Is the gain only a wider clip? The parametric form on the held-out regimes, the same 16 seeds,
#    against PPO (retrained on the same keys: the same numbers as step 1's).
# 5. (Added after the Breakout horizon showed the kept objective losing at 4x and 16x, before step 5 ran.) Does
#    the held-out gain last? SpaceInvaders at 2,500,000 steps (16x the longest training run), 8 seeds, kept vs
#    PPO and DPO.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN=${1:-results/short_long_minatar/run}
OUT=results/short_long_minatar
if [ -f "$RUN/objective_best.msgpack" ]; then cp "$RUN/objective_best.msgpack" "$OUT/kept.msgpack"
else cp "$RUN/objective.msgpack" "$OUT/kept.msgpack"; fi
HELD_OUT=$(python -c "import yaml; print(','.join(yaml.safe_load(open('$RUN/config.yaml'))['held_out_envs']))")
metadisco evaluate "kept=$OUT/kept.msgpack" --baselines ppo,dpo --envs "$HELD_OUT" --seeds 16 --seed 1000 \
  --no-progress --out "$OUT/eval_held_out" 2>&1 | tee "$OUT/eval_held_out.txt"
metadisco evaluate "kept=$OUT/kept.msgpack" --baselines ppo --envs Breakout-MinAtar@156250,Breakout-MinAtar@625000 \
  --seeds 16 --seed 1000 --no-progress --out "$OUT/eval_horizon" 2>&1 | tee "$OUT/eval_horizon.txt"
metadisco evaluate "kept=$OUT/kept.msgpack" --baselines ppo --envs Breakout-MinAtar@2500000 \
  --seeds 8 --seed 1000 --no-progress --out "$OUT/eval_horizon_16x" 2>&1 | tee "$OUT/eval_horizon_16x.txt"
metadisco plot "$OUT/kept.msgpack" --out "$OUT/figures"
metadisco distil "$OUT/kept.msgpack" --method parametric --out "$OUT/distil_parametric"
metadisco distil "$OUT/kept.msgpack" --method symbolic --out "$OUT/distil_symbolic"
metadisco evaluate "parametric=$OUT/distil_parametric/distilled.msgpack" --baselines ppo --envs "$HELD_OUT" \
  --seeds 16 --seed 1000 --no-progress --out "$OUT/eval_held_out_parametric" 2>&1 | tee "$OUT/eval_held_out_parametric.txt"
metadisco evaluate "kept=$OUT/kept.msgpack" --baselines ppo,dpo --envs SpaceInvaders-MinAtar@2500000 \
  --seeds 8 --seed 1000 --no-progress --out "$OUT/eval_held_out_16x" 2>&1 | tee "$OUT/eval_held_out_16x.txt"
