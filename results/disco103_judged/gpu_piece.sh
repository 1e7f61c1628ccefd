#!/usr/bin/env bash
# One piece of run.sh (the declared plan, unchanged) on a lent GPU machine, where there is no `metadisco` command
# and no ../shared/: env.sh installs the carried wheels and puts this checkout on PYTHONPATH, a two-line
# `metadisco` on PATH runs the package, and the imported rule is carried. Prepare here, then one device call:
#   bash results/bench/gpu/wheels.sh
#   mkdir -p runs && metadisco import --format disco103 ../shared/data/disco103/disco_103.npz --out runs/disco103.msgpack
#   device: bash results/disco103_judged/gpu_piece.sh          carry: .whl, runs/disco103.msgpack
# The piece stops after PIECE_TIMEOUT seconds (default 540: a 10-minute call with room to copy); its finished cells
# come back as $OUT/disco103_judged.tgz (a tarball: the device returns no folder that deep, and keeps no cells from
# one call to the next, so every call must carry its cells back): `tar xzf FILES_AT/disco103_judged.tgz -C
# results/disco103_judged` here, then commit eval/cells/. Session 49 on an H200: Catch and Breakout (36 cells) took
# 270 s in a call (Disco103's 16 seeds at 1e6 steps about 18-24 s a call); SpaceInvaders, Asterix and Freeway are left.
set -u
cd "$(dirname "$0")/../.."
. results/bench/gpu/env.sh
[ -f runs/disco103.msgpack ] || { echo "runs/disco103.msgpack was not carried (see this script's header)"; exit 2; }
mkdir -p /tmp/bin && printf '#!/bin/sh\nexec python3 -m metadisco "$@"\n' > /tmp/bin/metadisco && chmod +x /tmp/bin/metadisco
export PATH=/tmp/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L
PIECE_TIMEOUT=${PIECE_TIMEOUT:-540} bash results/disco103_judged/run.sh
echo "run.sh exit status $? (124: the piece's time ran out; --resume goes on from the cells)"
mkdir -p "${OUT:-/tmp/out}" && tar czf "${OUT:-/tmp/out}/disco103_judged.tgz" -C results/disco103_judged eval/cells eval.txt
ls results/disco103_judged/eval/cells | wc -l
