#!/usr/bin/env bash
# The GPU queue's determinism job: the quickstart twice with deterministic GPU kernels (the command's default,
# `--xla_gpu_deterministic_ops=true`) and once without, on one machine. Writes DIR/determinism.json: whether the two
# deterministic runs agree bit for bit (every metrics line but its timings, and objective.msgpack's bytes), whether
# the run without the flag agrees with them, and each run's wall seconds (the flag's cost).
#   bash results/gpu_queue/determinism.sh DIR        (on the device, from results/gpu_queue/queue.py)
set -euo pipefail
dir=$1
mkdir -p "$dir"
run() {  # run NAME XLA_FLAGS
  local t0; t0=$(date +%s.%N)
  XLA_FLAGS="$2" metadisco --no-progress meta-train experiments/quickstart.yaml --out "/tmp/det_$1" \
    > "$dir/$1.log" 2>&1
  cp "/tmp/det_$1/metrics.jsonl" "$dir/$1_metrics.jsonl"
  python3 -c "print(round($(date +%s.%N) - $t0, 1))" > "$dir/$1.seconds"
}
rm -rf /tmp/det_*
run deterministic_1 ""
run deterministic_2 ""
run nondeterministic "--xla_gpu_deterministic_ops=false"
python3 - "$dir" <<'PY'
import json, sys
from pathlib import Path
d = Path(sys.argv[1])
names = ("deterministic_1", "deterministic_2", "nondeterministic")
strip = lambda row: {k: v for k, v in row.items() if k not in ("seconds", "es_seconds")}
lines = {n: [strip(json.loads(x)) for x in (d / f"{n}_metrics.jsonl").read_text().splitlines()] for n in names}
objective = {n: Path(f"/tmp/det_{n}/objective.msgpack").read_bytes() for n in names}
devices = json.loads(Path("/tmp/det_deterministic_1/devices.json").read_text())
out = {"deterministic_runs_equal": lines[names[0]] == lines[names[1]] and objective[names[0]] == objective[names[1]],
       "without_flag_equal": lines[names[0]] == lines[names[2]] and objective[names[0]] == objective[names[2]],
       "seconds": {n: float((d / f"{n}.seconds").read_text()) for n in names}, "devices": devices}
(d / "determinism.json").write_text(json.dumps(out, indent=2) + "\n")
print(json.dumps(out))
PY
