# Issue 44 item 2 on the lent GPU (one device call): OPEN's released Breakout and Asterix optimisers against
# Adam-PPO with its learning rate tuned, 16 seeds each, at OPEN's full budget (1e7 env steps: 1220 updates of
# 64 envs x 128 steps), scored on 16 deterministic episodes per trained agent. The four programs run at once on
# the one GPU (each alone leaves it mostly idle), so their wall times are not speed measurements.
# .gpu_open/ (carried, not committed) holds `metadisco import --format open rl_optimizer/pretrained/<env>_OPEN.npy`.
. results/bench/gpu/env.sh
nvidia-smi -L
job() { local name=$1; shift; local t0=$(date +%s)
        timeout 520 python3 -m metadisco "$@" --no-progress > "$OUT/$name.log" 2>&1
        echo "=== $name rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/$name.log"; }
open() { job "$1_open" train --env "$2" --timesteps 10000000 --seeds 16 --seed 0 --set eval_episodes=16 \
           --objective ".gpu_open/open_$1.msgpack" --out "$OUT/$1_open"; }
adam() { job "$1_adam" sweep "results/open/gpu_1e7/$1_adam_sweep.yaml" --out "$OUT/$1_adam"; }
open breakout Breakout-MinAtar & adam breakout & open asterix Asterix-MinAtar & adam asterix & wait
rm -rf "$OUT"/*/cells "$OUT"/*/checkpoints
ls -R "$OUT" | head -40
