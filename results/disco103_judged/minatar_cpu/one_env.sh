#!/usr/bin/env bash
# One env's table from the CPU judge's committed cells (session 48), by ../render_envs.sh: nothing trains.
#   bash results/disco103_judged/minatar_cpu/one_env.sh Breakout-MinAtar [OUT]
set -euo pipefail
cd "$(dirname "$0")/../../.."
ENV=$1
exec bash results/disco103_judged/render_envs.sh results/disco103_judged/minatar_cpu "$ENV@156250" \
  "${2:-results/disco103_judged/minatar_cpu/${ENV%%-*}_only}"
