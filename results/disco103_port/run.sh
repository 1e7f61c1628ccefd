#!/usr/bin/env bash
# Issue 66, item 2: metadisco's port of Disco103's update rule against DeepMind's own code (disco_rl at commit
# 9059a29 with dm-haiku, rlax, distrax), on identical inputs: three updates of a recorded Catch rollout and 36 random
# batches in float32, the same random batches in float64. Needs the network only to install disco_rl.
#   bash results/disco103_port/run.sh [WEIGHTS.npz]
set -euo pipefail
cd "$(dirname "$0")/../.."
weights=${1:-../shared/data/disco103/disco_103.npz}
venv=${DISCO_VENV:-/tmp/disco-venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -e . -c constraints.txt
  grep -E "^(jax|jaxlib|numpy|optax|scipy)==" constraints.txt > "$venv/jax-pins.txt"
  "$venv/bin/pip" install -q "git+https://github.com/google-deepmind/disco_rl@9059a29f7121d60948f25ef165e08e050e9399c8" \
    dm-env -c "$venv/jax-pins.txt"
fi
"$venv/bin/python" results/disco103_port/disco103_port.py --weights "$weights" --out results/disco103_port/port_check.json \
  | tee results/disco103_port/port_check.txt
