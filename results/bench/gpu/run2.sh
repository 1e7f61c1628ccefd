# Issue 45, item 4, second call: rejax's figures (the first call carried a tensorflow-probability that does not
# import on the image's jax; constraints.txt's tfp-nightly does), and the per-env cases again without the learned
# pieces (the first call's cases ran out of time in them, before writing their JSON).
. results/bench/gpu/env.sh
step() { local limit=$1 name=$2; shift 2; echo "=== $name (limit ${limit}s) $(date +%T)";
         local t0=$(date +%s.%N); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?;
         echo "=== $name rc=$rc wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"; tail -6 "$OUT/$name.log"; }
step 170 bench_peers python3 -m metadisco bench --peers --only-peers --peer-figures ppo --repeats 3 --out "$OUT/gpu_peers.json" --no-progress
step 120 bench_cases python3 -m metadisco bench --envs CartPole-v1,SpaceInvaders-MinAtar --no-learned --out "$OUT/gpu.json" --no-progress
