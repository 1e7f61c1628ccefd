"""PBT against random search at the same env steps: the best agent's final return of paired runs.

    python analysis/pbt_vs_random.py --pbt runs/pbt_s0 runs/pbt_s1 ... --random runs/random_s0 ... --out DIR

Run i of each list must share the config's seed (same initial population drawn from the space, same agent
keys; `exploit.kind=none` makes a PBT config a random search at the same env steps), so the difference of run
i is paired. Writes DIR/comparison.json (per method: best returns, mean, IQM with its stratified-bootstrap 95%
CI; the paired difference's mean with a bootstrap 95% CI; P(PBT > random)), DIR/comparison.md and
DIR/comparison.png.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from metadisco import stats
from metadisco.core.io import atomic_write_text, read_json, write_json
from metadisco.core.stats import stat_block
from metadisco.figures import pyplot, save_figure


def best_returns(runs: list[str]) -> tuple[np.ndarray, list[dict]]:
    summaries = [read_json(Path(r) / "summary.json") for r in runs]
    return np.array([s["best_return"] if s["best_return"] is not None else np.nan for s in summaries]), summaries


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pbt", nargs="+", required=True, help="PBT run directories")
    parser.add_argument("--random", nargs="+", required=True, help="random-search run directories, same seeds")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if len(args.pbt) != len(args.random):
        parser.error("give as many random-search runs as PBT runs (paired by seed)")
    pbt, pbt_summaries = best_returns(args.pbt)
    rand, rand_summaries = best_returns(args.random)
    steps = {s["env_steps"] for s in pbt_summaries + rand_summaries}
    if len(steps) != 1:
        parser.error(f"the runs used different total env steps: {sorted(steps)}")
    diff = pbt - rand
    mean, low, high = stats.mean_curve_ci(diff[:, None])
    p, p_ci = stats.aggregate_probability_of_improvement([(pbt, rand)])
    report = {"runs": len(pbt), "env_steps_per_run": steps.pop(),
              "pbt": {"best_return": pbt.tolist(), **stat_block(pbt, 0)},
              "random": {"best_return": rand.tolist(), **stat_block(rand, 0)},
              "paired_difference": {"values": diff.tolist(), "mean": float(mean[0]),
                                    "ci95": [float(low[0]), float(high[0])]},
              "probability_pbt_better": {"p": p, "ci95": list(p_ci) if p_ci else None},
              "pbt_best_schedules": [s["best_schedule"] for s in pbt_summaries],
              "pbt_runs": args.pbt, "random_runs": args.random}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "comparison.json", report)
    md = [f"# PBT vs random search ({len(pbt)} paired seeds, {report['env_steps_per_run']:,} env steps per run)", "",
          "| method | mean | IQM | 95% CI of IQM |", "|---|---|---|---|"]
    for name in ("pbt", "random"):
        b = report[name]
        ci = f"[{b['ci95'][0]:.1f}, {b['ci95'][1]:.1f}]" if b["ci95"] else "n/a"
        md.append(f"| {name} | {b['mean']:.1f} | {b['iqm']:.1f} | {ci} |")
    d = report["paired_difference"]
    md += ["", f"Paired difference (PBT - random), mean {d['mean']:.1f}, 95% bootstrap CI "
               f"[{d['ci95'][0]:.1f}, {d['ci95'][1]:.1f}]; P(PBT > random) = {p:.2f}"
               + (f" [{p_ci[0]:.2f}, {p_ci[1]:.2f}]" if p_ci else "") + "."]
    atomic_write_text(out / "comparison.md", "\n".join(md) + "\n")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 4.0))
    for i in range(len(pbt)):
        ax.plot([0, 1], [rand[i], pbt[i]], "-o", color="0.6", ms=4)
    for x, name in ((0, "random"), (1, "pbt")):
        b = report[name]
        if b["ci95"]:
            ax.errorbar([x + 0.08], [b["iqm"]], yerr=[[b["iqm"] - b["ci95"][0]], [b["ci95"][1] - b["iqm"]]],
                        fmt="s", color="#d62728", capsize=4)
    ax.set_xticks([0, 1], ["random search", "PBT"])
    ax.set_ylabel("best agent's final return")
    ax.set_title(f"paired seeds (lines); IQM, 95% CI (red)\ndifference {d['mean']:.1f} "
                 f"[{d['ci95'][0]:.1f}, {d['ci95'][1]:.1f}]")
    ax.grid(alpha=0.3)
    save_figure(fig, out / "comparison.png", 150)
    print(json.dumps({k: report[k] for k in ("paired_difference", "probability_pbt_better")}))


if __name__ == "__main__":
    main()
