# Issue 64, item 2: one prepared call on the lent GPU, run from the repository root with .whl and .peers carried
# (env.sh installs the wheels; .peers/purejaxrl holds PureJaxRL's ppo.py and wrappers.py, commit 31756b1, as fetched
# from github.com/luchris429/purejaxrl, Apache-2.0). (1) `metadisco bench --peers` for CartPole: metadisco, rejax
# and PureJaxRL at 1 seed, 16 seeds and a population, alternating, with each program's GPU kernels; (2) the levers
# on PPO's loop and the one-seed programs' optimised HLO (levers.py). Logs and JSON go to $OUT.
. results/bench/gpu/env.sh
export METADISCO_PUREJAXRL=$PWD/.peers/purejaxrl PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import jax; print(jax.__version__, jax.devices())"
step 240 bench_peers python3 -m metadisco bench --peers --only-peers --peer-figures ppo --purejaxrl .peers/purejaxrl \
  --repeats 3 --out "$OUT/gpu_peers.json" --no-progress
step 170 levers python3 results/bench/gpu/three_peers/levers.py --out "$OUT" --repeats 3
