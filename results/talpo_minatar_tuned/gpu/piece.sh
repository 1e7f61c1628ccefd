#!/usr/bin/env bash
# Issue 63, item 5: one 9-minute piece of experiments/talpo_minatar_tuned_gpu.yaml on a lent GPU, resuming the
# committed run directory (results/talpo_minatar_tuned/gpu/run) where the last piece stopped. The run checkpoints
# every generation and writes every file atomically, so the piece's end (`timeout`, SIGTERM) loses at most the
# generation under way. Commit the run directory after each piece (checkpoints are a few KB: a 16-unit drift).
# On the device machine: `bash results/talpo_minatar_tuned/gpu/piece.sh` with `.whl` carried (results/bench/gpu/).
set -u
cd "$(dirname "$0")/../../.."
[ -f results/bench/gpu/env.sh ] && . results/bench/gpu/env.sh
RUN=results/talpo_minatar_tuned/gpu/run
resume=$( [ -d "$RUN/checkpoints" ] && echo --resume )
timeout --signal=TERM 540 python3 -m metadisco.cli --no-progress --no-compile-cache meta-train \
  experiments/talpo_minatar_tuned_gpu.yaml --out "$RUN" $resume 2>&1 | tee -a results/talpo_minatar_tuned/gpu/pieces.log
tail -n 1 "$RUN/metrics.jsonl" 2>/dev/null | cut -c1-300
# A tarball, because the device returns no nested folder reliably (session 49: eval/cells came back as "depth") and
# keeps nothing between calls: `tar xzf FILES_AT/talpo_gpu_run.tgz -C results/talpo_minatar_tuned/gpu` here.
mkdir -p "${OUT:-/tmp/out}" && tar czf "${OUT:-/tmp/out}/talpo_gpu_run.tgz" -C results/talpo_minatar_tuned/gpu run pieces.log
