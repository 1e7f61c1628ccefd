"""Issue 63: the value-loss judge's table from the committed eval.json files: each method's tuned IQM and chosen lr,
and P(X > Y) with 95% CIs for every pair the README cites, on the fitness (mean_return, the area under the curve)
and the final return. Every method at its own best lr (selection seeds apart from the reported 32).
    python results/value_loss_tuned/table.py [eval_tuned | eval_tuned_high]"""

import json
import sys
from pathlib import Path

import numpy as np

from metadisco.core.stats import aggregate_probability_of_improvement

HERE = Path(__file__).resolve().parent
PAIRS = [("grid", "l2"), ("grid", "ppo"), ("drawn", "l2"), ("drawn", "ppo"), ("grid", "drawn"), ("l2", "ppo"),
         ("grid", "untuned"), ("drawn", "untuned"), ("l2", "untuned")]


def main(folder: str = "eval_tuned") -> None:
    env = json.loads((HERE / folder / "eval.json").read_text())["envs"]["CartPole-v1"]
    print(f"{folder}: method, chosen lr, IQM of the area under the curve, IQM of the final return")
    for method, cell in env.items():
        chosen = cell.get("tuning", {}).get("chosen")
        area, final = np.asarray(cell["mean_return"], float), np.asarray(cell["final_return"], float)
        q = lambda x: float(np.mean(np.sort(x)[len(x) // 4: len(x) - len(x) // 4]))  # noqa: E731
        print(f"  {method:8s} {chosen}  {q(area):6.1f}  {q(final):6.1f}")
    for score in ("mean_return", "final_return"):
        print(f"P(X > Y) on {score} [95% CI]")
        for x, y in PAIRS:
            if x in env and y in env:
                p, ci = aggregate_probability_of_improvement([(np.asarray(env[x][score], float),
                                                               np.asarray(env[y][score], float))])
                print(f"  P({x} > {y}) = {p:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]")


if __name__ == "__main__":
    main(*sys.argv[1:])
