#!/usr/bin/env bash
# Issue 66, item 2 (second part): Disco103's learning curves on Catch at DeepMind's eval-notebook settings, from
# DeepMind's own code on its jittable Catch (results/disco103_catch/disco103_catch_deepmind.py, the venv of
# results/disco103_port/run.sh) and from metadisco's update-rule trainer on gymnax's Catch-bsuite
# (results/disco103_catch/disco103_catch.py), seeds 0 and 1, 1000 steps (58,000 env steps) each; then the targets figure.
#   bash results/disco103_catch/run.sh [WEIGHTS.npz]
set -euo pipefail
cd "$(dirname "$0")/../.."
weights=${1:-../shared/data/disco103/disco_103.npz}
venv=${DISCO_VENV:-/tmp/disco-venv}
out=results/disco103_catch
python results/disco103_catch/disco103_catch.py --weights "$weights" --updates 1000 --seeds 0,1 --out "$out/metadisco.json" \
  | tee "$out/metadisco.txt"
"$venv/bin/python" results/disco103_catch/disco103_catch.py --weights "$weights" --updates 1000 --seeds 0,1 --env deepmind \
  --out "$out/metadisco_deepmind_catch.json" | tee "$out/metadisco_deepmind_catch.txt"
# The notebook plays an 8 x 8 board (jittable_envs.get_config_catch()), not the game's default 10 x 5.
"$venv/bin/python" results/disco103_catch/disco103_catch.py --weights "$weights" --updates 1000 --seeds 0,1 \
  --env deepmind-notebook --out "$out/metadisco_notebook_catch.json" | tee "$out/metadisco_notebook_catch.txt"
for seed in 0 1; do
  "$venv/bin/python" results/disco103_catch/disco103_catch_deepmind.py --weights "$weights" --steps 1000 --seed "$seed" \
    --out "$out/deepmind_seed$seed.json" | tee "$out/deepmind_seed$seed.txt"
done
# Issue 66, item 5: what the rule asks of the agent it trained, beside actor-critic's quantities.
python results/disco103_catch/disco103_figure.py --weights "$weights" --out "$out"
