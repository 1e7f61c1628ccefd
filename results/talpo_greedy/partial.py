"""The judge's finished envs, from its cells alone, while the rest run: for each env whose cells are all in
eval_1m/cells/, each method's point chosen as `evaluate` chooses it (most scored selection seeds, then the highest
mean final return) and P(row > column) on the report seeds with a stratified-bootstrap 95% CI. `run.sh` prints the
judge's own table once every env is done; this prints nothing it would not.

    python results/talpo_greedy/partial.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from metadisco.core import stats
from metadisco.evaluate.rules import chosen_point
from metadisco.evaluate.runner import run_from_record

CELLS = Path(__file__).resolve().parent / "eval_1m" / "cells"
METHODS = ("greedy", "ppo", "dpo", "floored")
LRS = tuple(float(np.float32(x)) for x in (2.5e-3, 5e-3, 1e-2))
PAIRS = (("greedy", "ppo"), ("greedy", "floored"), ("floored", "ppo"), ("dpo", "ppo"))


def main() -> None:
    cells = {}
    for path in CELLS.glob("*.json"):
        if path.name != "plan.json":
            cell = json.loads(path.read_text())
            cells[cell["key"]] = run_from_record(cell["record"])
    for env in ("SpaceInvaders-MinAtar", "Freeway-MinAtar"):
        reported = {}
        for m in METHODS:
            select = [cells.get(f"{env}|{m}|select|lr={lr!r}") for lr in LRS]
            if any(run is None for run in select):
                break
            lr = LRS[chosen_point([run.final_return for run in select])]
            run = cells.get(f"{env}|{m}|score|lr={lr!r}")
            if run is None:
                break
            reported[m] = (lr, run)
        if len(reported) < len(METHODS):
            print(f"{env}: not finished")
            continue
        print(f"{env}: chosen lr " + ", ".join(f"{m} {lr:g}" for m, (lr, _) in reported.items()))
        for score in ("final_return", "eval_return"):
            means = ", ".join(f"{m} {np.nanmean(getattr(r, score)):.1f}" for m, (_, r) in reported.items())
            print(f"  {score} means: {means}")
            for a, b in PAIRS:
                p, ci = stats.aggregate_probability_of_improvement(
                    [(getattr(reported[a][1], score), getattr(reported[b][1], score))], seed=0)
                print(f"  {score}: P({a} > {b}) = {p:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]")


if __name__ == "__main__":
    main()
