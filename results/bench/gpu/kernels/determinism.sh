# Is the README's determinism claim true on a GPU? The quickstart twice on the same machine, same seed: every
# metric but the timings compared (issue 45, item 4). Run from the repository root with .whl carried.
. results/bench/gpu/env.sh
for i in 1 2; do
  python3 -m metadisco meta-train experiments/quickstart.yaml --out /tmp/q$i --no-progress > "$OUT/determinism_run$i.log" 2>&1
  cp /tmp/q$i/metrics.jsonl "$OUT/determinism_run${i}_metrics.jsonl"
  tail -3 "$OUT/determinism_run$i.log"
done
python3 - "$OUT" <<'PY'
import json, sys
runs = [[json.loads(line) for line in open(f"{sys.argv[1]}/determinism_run{i}_metrics.jsonl")] for i in (1, 2)]
strip = lambda row: {k: v for k, v in row.items() if k not in ("seconds", "es_seconds")}
same = [strip(a) == strip(b) for a, b in zip(*runs)]
print(f"lines {len(runs[0])} and {len(runs[1])}; identical but for timings: {sum(same)} of {len(same)}")
PY
cmp /tmp/q1/objective.msgpack /tmp/q2/objective.msgpack && echo "objective.msgpack: identical bytes"
