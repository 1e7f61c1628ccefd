#!/usr/bin/env bash
# Issue 43, item 2: the objective meta-trained by experiments/discobench_split.yaml, judged on DiscoBench's
# meta-test pair. Declared before meta-training ran.
#   bash results/discobench_split/evaluate.sh [RUN_DIR]          (default: results/discobench_split/run)
#
# kept: the ES mean validation kept (objective_best.msgpack), else the final mean.
# 1. Meta-test pair at the budget where the calibration map shows objectives separating (625,000 steps, 1/16 of
#    the preset: DPO loses to PPO there on SpaceInvaders and Asterix), 16 reported seeds (base seed 1000;
#    meta-training drew from seed 0), kept vs PPO and DPO, every method's lr tuned over {2.5e-3, 5e-3, 1e-2} on
#    16 selection seeds of their own (fresh_seeds, the honest rule), scored on the final training return with 16
#    deterministic episodes per agent recorded (DiscoBench's score; P(improvement) printed on both).
# 2. The same at DiscoBench's own rule (same_seeds: choose and report on the same seeds), for comparison with its
#    numbers; reuses no cells of step 1 (another directory).
# DiscoBench's full 1e7 steps (10 lrs x 8 seeds) is hours per env per method here; not in this script.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN=${1:-results/discobench_split/run}
OUT=results/discobench_split
if [ -f "$RUN/objective_best.msgpack" ]; then cp "$RUN/objective_best.msgpack" "$OUT/kept.msgpack"
else cp "$RUN/objective.msgpack" "$OUT/kept.msgpack"; fi
ENVS=Asterix-MinAtar@625000,SpaceInvaders-MinAtar@625000
metadisco evaluate "kept=$OUT/kept.msgpack" --baselines ppo,dpo --envs "$ENVS" --seeds 16 --seed 1000 \
  --tune lr=2.5e-3,5e-3,1e-2 --eval-episodes 16 --no-progress --resume --out "$OUT/eval_meta_test" 2>&1 \
  | tee "$OUT/eval_meta_test.txt"
metadisco evaluate "kept=$OUT/kept.msgpack" --baselines ppo,dpo --envs "$ENVS" --seeds 16 --seed 1000 \
  --tune lr=2.5e-3,5e-3,1e-2 --tune-rule same_seeds --score eval_return --eval-episodes 16 --no-progress \
  --resume --out "$OUT/eval_meta_test_same_seeds" 2>&1 | tee "$OUT/eval_meta_test_same_seeds.txt"
metadisco plot "$OUT/kept.msgpack" --out "$OUT/figures"
metadisco distil "$OUT/kept.msgpack" --method parametric --out "$OUT/distil_parametric"
metadisco export "$OUT/kept.msgpack" --format discobench --out "$OUT/export_discobench"
metadisco export "$OUT/kept.msgpack" --format jax --out "$OUT/export_jax"
