#!/bin/bash
# Issue 31, item 3: the quickstart's time before its first generation, with cold caches (compilation and baseline
# caches in a fresh XDG_CACHE_HOME) and then warm (the same settings again, same caches), two rounds.
#   bash results/bench/setup_time.sh > results/bench/setup_time.txt      # about 4 minutes, idle machine
# "before it" is the wall time of `meta-train --set generations=1` less generation 0's own seconds (its metrics
# line): start-up, PPO's reference scores, the random policy, the initial objective's scores, compiling, and the
# end-of-run scoring of the ES mean, which no cache can hold (it depends on the run).
set -e
work=$(mktemp -d)
for round in 1 2; do
  export XDG_CACHE_HOME=$work/cache$round
  for pass in cold warm; do
    rm -rf "$work/out"
    start=$(date +%s.%N)
    metadisco meta-train experiments/quickstart.yaml --out "$work/out" --set generations=1 --no-progress \
      > "$work/$round-$pass.out" 2> "$work/$round-$pass.err"
    end=$(date +%s.%N)
    python3 -c "
import json
line = json.loads(open('$work/out/metrics.jsonl').readline())
wall = $end - $start
print('round $round $pass: wall %.1f s, generation 0 %.1f s, before it %.1f s' % (wall, line['seconds'], wall - line['seconds']))"
    cp "$work/out/metrics.jsonl" "$work/$round-$pass.metrics.jsonl"
  done
  python3 -c "
import json
strip = lambda p: [{k: v for k, v in json.loads(l).items() if 'seconds' not in k} for l in open(p)]
same = strip('$work/$round-cold.metrics.jsonl') == strip('$work/$round-warm.metrics.jsonl')
print('round $round: warm metrics equal to cold apart from timings:', same)"
done
rm -rf "$work"
