"""Per-task PPO-normalised population mean per generation of a paired run (from metrics.jsonl and baselines.json):
which tasks move the population's mean fitness."""
import collections
import json
import sys
from pathlib import Path

run = sys.argv[1]
b = json.loads(Path(f"{run}/baselines.json").read_text())
rows = collections.defaultdict(list)
for line in Path(f"{run}/metrics.jsonl").read_text().splitlines():
    d = json.loads(line)
    for t in d.get("tasks", []):
        env = t.split("@")[0]
        gap = b["ppo_gap"][t]
        if d["returns"].get(env) is None or d["ppo"].get(t) is None:
            continue
        rows[t].append(1 + (d["returns"][env] - d["ppo"][t]) / gap)
print(f"{'task':34s} {'n':>3s} {'mean':>7s} {'min':>7s} {'max':>7s}  "
      "(population mean, PPO-normalised, per generation drawn)")
for t, v in sorted(rows.items()):
    import statistics as s
    print(f"{t:34s} {len(v):3d} {s.mean(v):7.3f} {min(v):7.3f} {max(v):7.3f}")
