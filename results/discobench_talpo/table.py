"""run.sh's units as DiscoBench scores them: per env and method, the learning rate (of those run) whose mean
deterministic-episode return over the seeds is best, that mean with a 95% bootstrap CI (DiscoBench's
`return_mean`, chosen and reported on the same seeds), the training return there, and P(method > ppo) at each
one's best lr with a 95% bootstrap CI; then every lr's mean. A partial run says which lrs it has compared.

    python results/discobench_talpo/table.py [UNITS_DIR]
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import bootstrap

from metadisco.core.stats import aggregate_probability_of_improvement

UNITS = Path(__file__).parent / "units"


def mean_ci(x) -> str:
    x = np.asarray(x, float)
    if x.size < 2:
        return f"{np.mean(x):.2f}"
    res = bootstrap((x,), np.mean, n_resamples=2000, method="percentile", random_state=0)
    return f"{np.mean(x):.2f} [{res.confidence_interval.low:.2f}, {res.confidence_interval.high:.2f}]"


def p_ci(x, y) -> str:
    """P(x > y) over the seeds with its 95% stratified-bootstrap CI."""
    point, ci = aggregate_probability_of_improvement([(x, y)])
    return f"{point:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def main(units: Path) -> None:
    runs = defaultdict(dict)  # (env, method) -> {lr_index: record}
    for path in sorted(units.glob("*.json")):
        r = json.loads(path.read_text())
        runs[(r["env"], r["method"])][r["lr_index"]] = r
    if not runs:
        sys.exit(f"no unit records in {units}: run results/discobench_talpo/run.sh first")
    best = {key: max(by_lr.values(), key=lambda r: np.mean(r["eval_return"])) for key, by_lr in runs.items()}
    print("| env | method | lrs run | best lr | deterministic episodes, mean [95% CI] | training return "
          "| P(method > ppo) [95% CI] |")
    print("|---|---|---|---|---|---|---|")
    for (env, method), r in sorted(best.items()):
        ppo = best.get((env, "ppo"))
        p = "" if method == "ppo" or ppo is None else p_ci(r["eval_return"], ppo["eval_return"])
        print(f"| {env} | {method} | {len(runs[(env, method)])} | {r['lr']:.4g} | {mean_ci(r['eval_return'])} "
              f"| {mean_ci(r['train_return'])} | {p} |")
    print("\nNot DiscoBench's score and not declared (added after the first table was read): the training return it "
          "prints (the mean of every env's last finished episode over the last 5% of updates), each method at its "
          "own best lr by that return:\n")
    print("| env | method | best lr | training return, mean [95% CI] | P(method > ppo) [95% CI] |")
    print("|---|---|---|---|---|")
    best_train = {key: max(by_lr.values(), key=lambda r: np.mean(r["train_return"])) for key, by_lr in runs.items()}
    for (env, method), r in sorted(best_train.items()):
        ppo = best_train.get((env, "ppo"))
        p = "" if method == "ppo" or ppo is None else p_ci(r["train_return"], ppo["train_return"])
        print(f"| {env} | {method} | {r['lr']:.4g} | {mean_ci(r['train_return'])} | {p} |")
    print("\nMean deterministic return per learning rate (DiscoBench's grid index: lr):\n")
    indices = sorted({i for by_lr in runs.values() for i in by_lr})
    lrs = {i: next(by_lr[i]["lr"] for by_lr in runs.values() if i in by_lr) for i in indices}
    print("| env | method | " + " | ".join(f"{lrs[i]:.3g}" for i in indices) + " |")
    print("|---|---|" + "---|" * len(indices))
    for (env, method), by_lr in sorted(runs.items()):
        cells = [f"{np.mean(by_lr[i]['eval_return']):.2f}" if i in by_lr else "" for i in indices]
        print(f"| {env} | {method} | " + " | ".join(cells) + " |")
    seconds = [s for by_lr in runs.values() for r in by_lr.values() for s in r["seconds"]]
    print(f"\n{len(seconds)} agents, median {np.median(seconds):.0f} s each (two workers sharing 2 cores).")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else UNITS)
