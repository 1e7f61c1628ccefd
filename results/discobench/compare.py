"""DiscoBench's own code against `metadisco evaluate` on the same objectives and settings (export_check.sh): per
env and method, the mean deterministic-episode return over seeds with a 95% bootstrap CI from each, and whether
the two CIs overlap; the same for the training return of the last 5% of updates.

    python results/discobench/compare.py results/discobench/discobench.log results/discobench/eval.json
"""

import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import bootstrap

from metadisco.evaluate.layout import read_report


def ci(x):
    x = np.asarray([v for v in x if v is not None and np.isfinite(v)], float)
    if x.size < 2:
        return float(np.mean(x)) if x.size else float("nan"), (float("nan"), float("nan"))
    res = bootstrap((x,), np.mean, n_resamples=2000, method="percentile", random_state=0)
    return float(np.mean(x)), (float(res.confidence_interval.low), float(res.confidence_interval.high))


def main(log_path: str, eval_path: str) -> None:
    discobench, current = {}, None
    for line in Path(log_path).read_text().splitlines():
        if line.startswith("== DiscoBench task, "):
            method, env = line.removeprefix("== DiscoBench task, ").split(", ")
            current = (method, f"{env.removeprefix('MinAtar/')}-MinAtar")
        elif line.startswith("{") and current:
            discobench[current] = json.loads(line)
    report = read_report(eval_path)
    print("| env | method | score | DiscoBench's code: mean [95% CI] | metadisco evaluate: mean [95% CI] | overlap |")
    print("|---|---|---|---|---|---|")
    for (method, env), theirs in sorted(discobench.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ours = report["envs"][env][method]
        for name, their_key, our_key in (("deterministic episodes", "eval_return", "eval_return"),
                                         ("training return, last 5%", "train_return", "final_return")):
            (m1, (lo1, hi1)), (m2, (lo2, hi2)) = ci(theirs[their_key]), ci(ours[our_key])
            overlap = "yes" if max(lo1, lo2) <= min(hi1, hi2) else "no"
            print(f"| {env} | {method} | {name} | {m1:.2f} [{lo1:.2f}, {hi1:.2f}] | {m2:.2f} [{lo2:.2f}, {hi2:.2f}] "
                  f"| {overlap} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
