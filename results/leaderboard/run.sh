#!/usr/bin/env bash
# The cpu suite's board (metadisco/leaderboard/suites/cpu.yaml, entries.yaml), declared before any of it ran: every
# entry on eight envs of four families, each entry's lr tuned over 0.5 / 1 / 2 x its own preset's on 8 selection
# seeds and reported at its best point on 16 fresh seeds, scores normalised between the random policy and tuned PPO.
# Resumable: each cell is written as it finishes; rerun until it prints the table.
#   bash results/leaderboard/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
metadisco leaderboard --suite cpu --out results/leaderboard/cpu 2>&1 | tee -a results/leaderboard/cpu.txt
