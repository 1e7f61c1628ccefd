# Issue 44, item 2, on the GPU's last minutes: OPEN's released Breakout and Asterix optimisers against Adam in
# metadisco's PPO, 16 seeds, deterministic episodes, at OPEN's own budgets (configs.py: Breakout 5e5, Asterix
# 1e7). Adam at the preset's lr 5e-3 here (the tuned grid is for the CPU run). .gpu_open/ holds the imported
# objective files (`metadisco import --format open rl_optimizer/pretrained/<env>_OPEN.npy`), carried.
. results/bench/gpu/env.sh
run() { local limit=$1 name=$2; shift 2; echo "=== $name $(date +%T)"; local t0=$(date +%s);
        timeout "$limit" python3 -m metadisco train --seeds 16 --set eval_episodes=16 --no-progress --out /tmp/$name "$@" \
          > "$OUT/$name.log" 2>&1; echo "=== $name rc=$? $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/$name.log";
        cp /tmp/$name/summary.json "$OUT/$name.json" 2>/dev/null; }
run 40 breakout_adam --env Breakout-MinAtar --timesteps 500000
run 50 breakout_open --env Breakout-MinAtar --timesteps 500000 --objective .gpu_open/open_breakout.msgpack
run 45 asterix_adam --env Asterix-MinAtar --timesteps 10000000
run 60 asterix_open --env Asterix-MinAtar --timesteps 10000000 --objective .gpu_open/open_asterix.msgpack
