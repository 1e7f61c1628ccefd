"""P(OPEN > tuned Adam) per env of the judging, each with its own 95% bootstrap CI (issue 44, item 3 asks for the
training env's CI; this run's report was written before `evaluate` kept per-env CIs). The same statistic
and bootstrap as the report's (`metadisco.core.stats.aggregate_probability_of_improvement`, here on one env at a
time), read from the judging's eval.json; both methods at their tuned learning rates.

    python results/open/cpu/per_env.py [results/open/cpu/eval/eval.json]
"""

import json
import sys
from pathlib import Path

import numpy as np

from metadisco.core.stats import aggregate_probability_of_improvement, iqm


def main(path: Path) -> None:
    report = json.loads(path.read_text())
    print("| env | score | OPEN IQM | tuned Adam IQM | P(OPEN > tuned Adam) [95% CI] | lr chosen (OPEN, Adam) |")
    print("|---|---|---:|---:|---|---|")
    for env, runs in report["envs"].items():
        open_, adam = runs["open"], runs["ppo"]
        chosen = tuple(r["tuning"]["chosen"]["lr"] for r in (open_, adam))
        for score in ("final_return", "eval_return"):
            x, y = (np.asarray(r[score], np.float64) for r in (open_, adam))
            p, ci = aggregate_probability_of_improvement([(x, y)])
            print(f"| {env} | {score} | {iqm(x):.1f} | {iqm(y):.1f} | {p:.2f} [{ci[0]:.2f}, {ci[1]:.2f}] | "
                  f"{chosen[0]:g}, {chosen[1]:g} |")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/open/cpu/eval/eval.json"))
