#!/usr/bin/env bash
# Issue 44, item 2: OPEN's released asterix_OPEN.npy against Adam with its learning rate tuned, Asterix-MinAtar at
# OPEN's full budget (1e7 env steps, 1220 updates of 64 envs x 128 steps), 16 seeds, on this 2-core CPU because no
# GPU was lent. The protocol of results/open/gpu_1e7/ (where Breakout ran and Asterix did not finish), declared in
# before it ran. In several parts: the sweep resumes by learning rate (`--resume`); the OPEN run is one
# call of about 2-3 h, rerun whole if stopped (it skips when its summary exists).
#   OPEN_SRC=/tmp/open_src/rl_optimizer bash results/open/cpu_asterix_1e7/run.sh [sweep|open|all]
set -euo pipefail
cd "$(dirname "$0")/../../.."
HERE=results/open/cpu_asterix_1e7
OPEN_SRC=${OPEN_SRC:-/tmp/open_src/rl_optimizer}
what=${1:-all}
if [[ $what == sweep || $what == all ]]; then
  metadisco sweep "$HERE/adam_sweep.yaml" --out "$HERE/adam" --resume --no-progress 2>&1 | tee -a "$HERE/adam.log"
fi
if [[ ($what == open || $what == all) && ! -f $HERE/open_summary.json ]]; then
  TMP=$(mktemp -d)
  metadisco import --format open "$OPEN_SRC/pretrained/asterix_OPEN.npy" --out "$TMP/open_asterix.msgpack"
  metadisco train --env Asterix-MinAtar --timesteps 10000000 --seeds 16 --seed 0 --set eval_episodes=16 \
    --objective "$TMP/open_asterix.msgpack" --no-progress --out "$TMP/open" 2>&1 | tee "$HERE/open.log"
  cp "$TMP/open/summary.json" "$HERE/open_summary.json"
fi
