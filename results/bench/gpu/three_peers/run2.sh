# Issue 64, second call (after run.sh's levers): the rollout unrolled 8 steps per loop iteration on a GPU by default
# (`metadisco.trainers.base.ROLLOUT_UNROLL_BY_PLATFORM`). (1) `metadisco bench --peers` again; (2) the README's main
# job, the quickstart, with its dry run's estimate beside it; (3) the trainer's tests on the GPU. Same carry as run.sh.
. results/bench/gpu/env.sh
export METADISCO_PUREJAXRL=$PWD/.peers/purejaxrl PYTHONUNBUFFERED=1
step 240 bench_peers python3 -m metadisco bench --peers --only-peers --peer-figures ppo --purejaxrl .peers/purejaxrl \
  --repeats 3 --out "$OUT/gpu_peers_unrolled.json" --no-progress
step 45 dryrun_quickstart python3 -m metadisco meta-train experiments/quickstart.yaml --dry-run --accelerator H200 --no-progress
step 60 quickstart python3 -m metadisco meta-train experiments/quickstart.yaml --out /tmp/quickstart --no-progress
cp /tmp/quickstart/metrics.jsonl "$OUT/quickstart_metrics.jsonl" 2>/dev/null
step 60 tests env JAX_PLATFORMS=cuda python3 -m pytest -q -p no:cacheprovider -n 0 tests/trainers/test_train.py tests/rl
