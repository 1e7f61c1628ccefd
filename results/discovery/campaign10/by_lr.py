"""How the population fared against PPO at the learning rate each generation drew (a run with `sampling.scale`):
per task, the generations split into thirds by their drawn lr, and per third the mean over generations of the
population's mean PPO-normalised score (`task_fitness` in metrics.jsonl), then the correlation of log lr with that
score over every generation. Reads metrics.jsonl only; nothing is trained.

    python results/discovery/campaign10/by_lr.py runs/discover_cpu10
"""

import collections
import json
import sys
from pathlib import Path

import numpy as np

run = sys.argv[1]
rows = collections.defaultdict(list)  # task -> [(lr, population mean score)]
for line in Path(f"{run}/metrics.jsonl").read_text().splitlines():
    d = json.loads(line)
    for task, settings in d.get("settings", {}).items():
        score = d.get("task_fitness", {}).get(task)
        if score is not None:
            rows[task].append((settings["lr"], score))
print(f"{'task':30s} {'third of drawn lr':>22s} {'n':>3s} {'population mean':>16s}")
for task, values in sorted(rows.items()):
    values.sort()
    for third in np.array_split(np.asarray(values), 3):
        lo, hi = third[0, 0], third[-1, 0]
        print(f"{task:30s} {f'{lo:.4f}-{hi:.4f}':>22s} {len(third):3d} {third[:, 1].mean():16.3f}")
    lr, score = np.asarray(values).T
    print(f"{task:30s} {'corr(log lr, score)':>22s} {len(values):3d} {np.corrcoef(np.log(lr), score)[0, 1]:16.3f}")
