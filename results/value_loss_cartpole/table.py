"""The reproduction's table from `evaluate`'s eval.json files: per budget, each method's IQM [95% CI] on the area
under the curve and on the final return, and P(learned > X) on both (evaluate's own statistics).

    python results/value_loss_cartpole/table.py results/value_loss_cartpole > results/value_loss_cartpole/table.md
"""

import sys
from pathlib import Path

import numpy as np

from metadisco import stats
from metadisco.evaluate.layout import read_report

root = Path(sys.argv[1])
print("| budget | method | IQM, area under the curve [95% CI] | IQM, final return [95% CI] | "
      "P(learned > it), area | P(learned > it), final return |")
print("|---|---|---|---|---|---|")
for name in ("eval_1x", "eval_2x"):
    report = read_report(root / name)
    env = next(iter(report["envs"]))
    steps = report["settings"]["timesteps"][env]
    by_score = report["aggregate"]["probability_of_improvement_by_score"]
    for method, entry in report["envs"][env].items():
        cells = []
        for score in ("mean_return", "final_return"):
            x = stats.finite(np.asarray(entry[score], float))
            lo, hi = stats.stratified_iqm_ci([x], seed=report["settings"]["seed"])
            cells.append(f"{stats.iqm(x):.1f} [{lo:.1f}, {hi:.1f}]")
        for score in ("mean_return", "final_return"):
            block = by_score[score].get(f"learned > {method}")
            cells.append("-" if block is None else f"{block['p']:.2f} [{block['ci95'][0]:.2f}, {block['ci95'][1]:.2f}]")
        print(f"| {env} @ {steps:,} | {method} | " + " | ".join(cells) + " |")
