#!/usr/bin/env bash
# The calibration map (issue 29, deliverable 1): DPO against PPO at each family's preset settings (PureJaxRL's,
# no per-method tuning), at fractions of the preset budget, 8 seeds, the same seed keys for both methods.
# Declared before the run; each evaluation writes results/calibration/<family>/<fraction>/ (eval.json, eval.md,
# figures) and its command line beside it (command.txt). Run from the repository root:
#   bash results/calibration/run.sh [FAMILY ...]      # default: every family below, cheapest first
# then draw the map:
#   python analysis/calibration_map.py results/calibration
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/calibration
SEEDS=8

# family | preset budget | fractions | envs
declare -A BUDGET=([classic]=500000 [bsuite]=500000 [misc]=500000 [minatar]=10000000 [brax]=50000000)
declare -A FRACTIONS=([classic]="1/16 1/4 1" [bsuite]="1/16 1/4 1" [misc]="1/16 1/4 1"
                      [minatar]="1/64 1/16 1/4" [brax]="1/512 1/128")
declare -A ENVS=(
  [classic]="CartPole-v1 Acrobot-v1 MountainCar-v0 Pendulum-v1 MountainCarContinuous-v0"
  [bsuite]="Catch-bsuite DeepSea-bsuite MemoryChain-bsuite UmbrellaChain-bsuite DiscountingChain-bsuite SimpleBandit-bsuite"
  [misc]="FourRooms-misc MetaMaze-misc PointRobot-misc BernoulliBandit-misc GaussianBandit-misc Reacher-misc Swimmer-misc Pong-misc FrozenLake-misc"
  [minatar]="Asterix-MinAtar Breakout-MinAtar Freeway-MinAtar SpaceInvaders-MinAtar Seaquest-MinAtar"
  [brax]="brax/ant brax/halfcheetah brax/hopper"
)
families=("$@")
[ ${#families[@]} -eq 0 ] && families=(classic bsuite misc minatar brax)

# Breadth first: every family's smallest fraction, then every family's next, so a partial run still maps all.
for rank in 0 1 2; do
  for family in "${families[@]}"; do
    read -r -a fractions <<< "${FRACTIONS[$family]}"
    [ $rank -lt ${#fractions[@]} ] || continue
    fraction=${fractions[$rank]}
    steps=$(( BUDGET[$family] * 1 / ${fraction#*/} ))
    [ "$fraction" = "1" ] && steps=${BUDGET[$family]}
    dir="$OUT/$family/${fraction/\//_}"
    [ -f "$dir/eval.json" ] && { echo "skip $dir (done)"; continue; }
    envs=$(for e in ${ENVS[$family]}; do printf '%s@%s,' "$e" "$steps"; done); envs=${envs%,}
    cmd=(metadisco evaluate dpo --baselines ppo --envs "$envs" --seeds "$SEEDS" --no-progress --out "$dir")
    mkdir -p "$dir"
    echo "${cmd[*]}" > "$dir/command.txt"
    echo "[$(date -u +%H:%M:%S)] $family $fraction ($steps steps)"
    start=$(date +%s)
    "${cmd[@]}" > "$dir/stdout.txt" 2> "$dir/stderr.txt"
    echo "$(( $(date +%s) - start )) s" > "$dir/seconds.txt"
  done
done
