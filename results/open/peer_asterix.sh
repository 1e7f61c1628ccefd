#!/usr/bin/env bash
# Issue 44, item 2, the Asterix half of the side-by-side: OPEN's released asterix_OPEN.npy trained by OPEN's own PPO
# and by metadisco's, Asterix-MinAtar at OPEN's settings (configs.py "asterix": the minatar preset's numbers) and a
# CPU budget of 5e5 steps (OPEN's is 1e7; as for Breakout, the question is whether the two codes score alike with
# the same weights, not the paper's claim). Declared before it ran.
#   OPEN_SRC=/tmp/open_src/rl_optimizer OPEN_PY=/tmp/open_venv/bin/python bash results/open/peer_asterix.sh
# OPEN_SRC and OPEN_PY are built as results/open/README.md says (section 2). OPEN's code runs 8 seeds (about 25 min
# of this 2-core CPU alone; 16 did not fit the session beside the OPEN judging), metadisco's 16 (the Breakout rows'
# count); the comparison is of means over seeds (Welch), on the final return and on 16 deterministic episodes.
set -euo pipefail
cd "$(dirname "$0")/../.."
OPEN_SRC=${OPEN_SRC:-/tmp/open_src/rl_optimizer}
OPEN_PY=${OPEN_PY:-/tmp/open_venv/bin/python}
OUT=results/open
"$OPEN_PY" "$OUT/run_open_peer.py" --open-src "$OPEN_SRC" --env asterix --timesteps 5e5 --seeds 8 \
  --optimizer open --out "$OUT/peer_asterix_open.json"
TMP=$(mktemp -d)
metadisco import --format open "$OPEN_SRC/pretrained/asterix_OPEN.npy" --out "$TMP/open_asterix.msgpack"
metadisco train --env Asterix-MinAtar --timesteps 500000 --objective "$TMP/open_asterix.msgpack" --seeds 16 \
  --set eval_episodes=16 --no-progress --out "$TMP/train" 2>&1 | tee "$OUT/metadisco_asterix_open.log"
cp "$TMP/train/summary.json" "$OUT/metadisco_asterix_open.json"
