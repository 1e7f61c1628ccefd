"""P(a > b) between any two methods of an evaluation, on the seeds they shared, for both scores: what
`metadisco evaluate` reports for the objective against each baseline, here also for the baselines against each
other (issue 30: P(DPO > PPO) on the same seeds as P(kept > PPO)).

    python results/short_long_minatar/compare.py results/short_long_minatar/eval_held_out kept,ppo dpo,ppo kept,dpo

Several evaluation directories (comma-separated) made with the same seeds and envs are read as one, so methods
of different evaluations compare on their shared seeds (each directory's base seed and seed count must agree).
"""

import sys
from pathlib import Path

import numpy as np

from metadisco import stats
from metadisco.evaluate.layout import read_report


def compare(report: dict, a: str, b: str, score: str) -> tuple[float, tuple[float, float] | None, dict]:
    envs = report["envs"]
    pairs = [(np.asarray(envs[e][a][score], float), np.asarray(envs[e][b][score], float)) for e in envs]
    p, ci = stats.aggregate_probability_of_improvement(pairs, seed=report["settings"]["seed"])
    return p, ci, {e: stats.probability_of_improvement(*pair) for e, pair in zip(envs, pairs, strict=True)}


def merged(eval_dirs: str) -> dict:
    """The reports of comma-separated evaluation directories as one: per env, every method of every report."""
    reports = [read_report(Path(d)) for d in eval_dirs.split(",")]
    first = reports[0]
    for other in reports[1:]:
        same = ("seed", "seeds", "seed_keys")
        if any(other["settings"][k] != first["settings"][k] for k in same):
            raise SystemExit(f"{eval_dirs}: the evaluations do not share their seeds ({', '.join(same)} differ)")
        for env, methods in other["envs"].items():
            first["envs"][env] = {**first["envs"][env], **methods}
    return first


def main(eval_dir: str, *pairs: str) -> None:
    report = merged(eval_dir)
    settings = report["settings"]
    print(f"{eval_dir}: {settings['seeds']} seeds per method and env (base seed {settings['seed']})")
    for pair in pairs:
        a, b = pair.split(",")
        for score in ("final_return", "mean_return"):
            p, ci, per_env = compare(report, a, b, score)
            ci_text = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
            envs = ", ".join(f"{e} {v:.2f}" for e, v in per_env.items())
            print(f"P({a} > {b}) on {score} = {p:.2f}{ci_text}  ({envs})")


if __name__ == "__main__":
    main(*sys.argv[1:])
