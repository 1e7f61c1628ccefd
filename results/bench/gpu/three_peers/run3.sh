# Issue 64, for the next lent GPU (not run yet): the head-to-head that call 2 lost, with the rollout unrolled 8 (the
# GPU default since session 38), and the nine programs of the dry run's kernel model measured again for its refit.
# One call, about 8 minutes: `bash results/bench/gpu/three_peers/run3.sh` with .whl and .peers carried (run.sh).
# bench --peers writes its JSON after every figure, so a step cut by its limit keeps what it measured.
. results/bench/gpu/env.sh
export METADISCO_PUREJAXRL=$PWD/.peers/purejaxrl PYTHONUNBUFFERED=1
step 330 bench_peers python3 -m metadisco bench --peers --only-peers --peer-figures ppo --purejaxrl .peers/purejaxrl \
  --repeats 3 --out "$OUT/gpu_peers_unrolled.json" --no-progress
step 150 iteration_cost python3 results/bench/gpu/kernels/iteration_cost.py --out "$OUT"
