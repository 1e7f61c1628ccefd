"""Issue 44 item 2: the table of results/open/gpu_1e7/README.md from the run's files (run from the repo root):
    python results/open/gpu_1e7/summarise.py
OPEN's released optimiser against Adam at the learning rate with the best IQM of deterministic-episode returns
over the sweep's grid (chosen on the same 16 seeds: DiscoBench's rule, optimistic for Adam)."""

import json
from pathlib import Path

import numpy as np

from metadisco.core.stats import aggregate_probability_of_improvement, iqm, stat_block

HERE = Path(__file__).parent


def row(name: str, scores) -> str:
    s = np.asarray(scores, float)
    block = stat_block(s, 0)
    return (f"| {name} | {s.mean():.1f} | {block['iqm']:.1f} [{block['ci95'][0]:.1f}, {block['ci95'][1]:.1f}] "
            f"| {s.std(ddof=1) / np.sqrt(s.size):.1f} |")


for env in ("breakout",):
    open_run = json.loads((HERE / f"{env}_open_summary.json").read_text())
    sweep = json.loads((HERE / f"{env}_adam_sweep.json").read_text())
    best = sweep["points"][sweep["best"]["index"]]
    print(f"### {env}: 16 seeds, {open_run['timesteps']:,} env steps\n")
    for score in ("eval_return", "final_return"):
        print(f"{score}\n\n| method | mean | IQM [95% CI] | s.e. |\n|---|---|---|---|")
        print(row("OPEN (released)", open_run[score]))
        for p in sweep["points"]:
            mark = " (tuned: best eval IQM)" if p is best else ""
            print(row(f"Adam lr {p['hyper']['lr']:g}{mark}", p[score]))
        point, ci = aggregate_probability_of_improvement([(np.asarray(open_run[score]), np.asarray(best[score]))])
        print(f"\nP(OPEN > tuned Adam) on {score} = {point:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]; "
              f"IQM OPEN {iqm(np.asarray(open_run[score])):.1f} vs tuned Adam {iqm(np.asarray(best[score])):.1f}\n")
