"""DiscoBench's score from its own runs (discobench_protocol.sh's log): per env and method, the learning rate
whose mean deterministic-episode return over the seeds is best, that mean (DiscoBench's `return_mean`, chosen and
reported on the same seeds) with a 95% bootstrap CI, the training return there, and P(method > PPO) on the same
seeds at each one's best learning rate.

    python results/discobench_split/protocol_table.py results/discobench_split/discobench_protocol.log
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import bootstrap

from metadisco.core.stats import probability_of_improvement


def ci(x) -> str:
    x = np.asarray(x, float)
    res = bootstrap((x,), np.mean, n_resamples=2000, method="percentile", random_state=0)
    return f"{np.mean(x):.2f} [{res.confidence_interval.low:.2f}, {res.confidence_interval.high:.2f}]"


def main(log_path: str) -> None:
    runs, current = defaultdict(list), None  # (env, method) -> one record per learning rate
    for line in Path(log_path).read_text().splitlines():
        if line.startswith("== DiscoBench task, "):
            method, env = line.removeprefix("== DiscoBench task, ").split(", ")
            current = (env, method)
        elif line.startswith("{") and current:
            runs[current].append(json.loads(line))
    best = {key: max(records, key=lambda r: np.mean(r["eval_return"])) for key, records in runs.items()}
    print("| env | method | best lr (of those run) | deterministic episodes, mean [95% CI] | training return "
          "| P(method > PPO) |")
    print("|---|---|---|---|---|---|")
    for (env, method), r in sorted(best.items()):
        ppo = best.get((env, "ppo"))
        p = "" if method == "ppo" or ppo is None else probability_of_improvement(r["eval_return"], ppo["eval_return"])
        p = p if p == "" else f"{p:.2f}"
        lrs = ", ".join(f"{x['lr']:.4g}: {np.mean(x['eval_return']):.2f}" for x in runs[(env, method)])
        print(f"| {env} | {method} | {r['lr']:.4g} ({lrs}) | {ci(r['eval_return'])} | {ci(r['train_return'])} "
              f"| {p} |")


if __name__ == "__main__":
    main(sys.argv[1])
