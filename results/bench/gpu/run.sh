# Issue 45, item 4: the README's two commands' work and `metadisco bench` on the lent GPU, one prepared call.
# Each step has its own time limit so that one slow step cannot take the others' figures with it; logs and JSON
# go to $OUT. Run from the repository root with .whl carried (results/bench/gpu/env.sh).
. results/bench/gpu/env.sh
step() { local limit=$1 name=$2; shift 2; echo "=== $name (limit ${limit}s) $(date +%T)";
         local t0=$(date +%s.%N); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?;
         echo "=== $name rc=$rc wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"; tail -4 "$OUT/$name.log"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
# 1. The main job: the quickstart meta-training, and the dry run's estimate for this GPU beside it.
step 60  dryrun     python3 -m metadisco meta-train experiments/quickstart.yaml --dry-run --accelerator H200 --no-progress
step 150 quickstart python3 -m metadisco meta-train experiments/quickstart.yaml --out /tmp/quickstart --no-progress
cp /tmp/quickstart/metrics.jsonl "$OUT/quickstart_metrics.jsonl" 2>/dev/null
# 2. Throughput: against rejax (1 seed, 16 seeds, a population, compile), then CartPole and MinAtar cases.
step 130 bench_peers python3 -m metadisco bench --peers --only-peers --peer-figures ppo --repeats 3 --out "$OUT/gpu_peers.json" --no-progress
step 130 bench_cases python3 -m metadisco bench --envs CartPole-v1,SpaceInvaders-MinAtar --out "$OUT/gpu.json" --no-progress
# 3. The test command's suite on the GPU, as far as the time left allows (the README's runs on the CPU).
step 60 tests env JAX_PLATFORMS=cuda python3 -m pytest -q -x -p no:cacheprovider -n 0 tests/trainers/test_train.py tests/rl
