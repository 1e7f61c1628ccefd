# One prepared call on the lent GPU. (1) What a loop iteration costs program by
# program, with each program's optimised HLO (iteration_cost.py), to correct the dry run's estimate for MinAtar;
# (2) the dry run of the MinAtar recipe and of the quickstart, each beside its own measured call; (3) the README's
# main job (the quickstart) again on today's code; (4) the GPU-side tests of what changed since then (the
# bounded Seaquest). Each step has its own time limit; logs and JSON go to $OUT. Run from the repository root with
# .whl carried (env.sh).
. results/bench/gpu/env.sh
step() { local limit=$1 name=$2; shift 2; echo "=== $name (limit ${limit}s) $(date +%T)";
         local t0=$(date +%s.%N); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?;
         echo "=== $name rc=$rc wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"; tail -12 "$OUT/$name.log"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
export PYTHONUNBUFFERED=1
step 170 iteration_cost python3 results/bench/gpu/kernels/iteration_cost.py --out "$OUT"
step 150 dryrun_short_long python3 -m metadisco meta-train experiments/short_long_minatar.yaml --dry-run --accelerator H200 --no-progress
step 60  dryrun_quickstart python3 -m metadisco meta-train experiments/quickstart.yaml --dry-run --accelerator H200 --no-progress
step 90  quickstart python3 -m metadisco meta-train experiments/quickstart.yaml --out /tmp/quickstart --no-progress
cp /tmp/quickstart/metrics.jsonl "$OUT/quickstart_metrics.jsonl" 2>/dev/null
step 70  tests env JAX_PLATFORMS=cuda python3 -m pytest -q -p no:cacheprovider -n 0 tests/envs/test_seaquest.py tests/trainers/test_train.py
