"""Issue 44 item 2 on this CPU: the table of results/open/cpu_asterix_1e7/README.md from the run's files, also while
the run is under way (run from the repo root):
    python results/open/cpu_asterix_1e7/summarise.py
Reads the sweep's finished cells (`adam/cells/`, one per learning rate) and OPEN's `open_summary.json`. Adam is
tuned as declared: the learning rate with the best IQM of deterministic-episode returns over the whole grid, chosen
on the same 16 seeds it is reported on. P(OPEN > tuned Adam) is printed only once every learning rate and OPEN have
finished; before that the table says what is missing."""

from pathlib import Path

import numpy as np

from metadisco.core.cells import unpack_array
from metadisco.core.io import read_json
from metadisco.core.stats import aggregate_probability_of_improvement, iqm, stat_block

HERE = Path(__file__).parent
SCORES = ("eval_return", "final_return")


def row(name: str, scores, seconds: float | None) -> str:
    s = np.asarray(scores, float)
    block = stat_block(s, 0)
    hours = "" if seconds is None else f"{seconds / 3600:.2f}"
    return (f"| {name} | {s.mean():.2f} | {block['iqm']:.2f} [{block['ci95'][0]:.2f}, {block['ci95'][1]:.2f}] "
            f"| {s.std(ddof=1) / np.sqrt(s.size):.2f} | {hours} |")


def adam_points() -> tuple[list[float], dict[float, dict]]:
    """The grid's learning rates, and per finished one its scores (16 seeds each) and seconds."""
    cells = HERE / "adam" / "cells"
    grid = read_json(cells / "plan.json")["settings"]["sweep"]["space"]["lr"]
    done = {}
    for path in cells.glob("*.json"):
        if path.name == "plan.json":
            continue
        cell = read_json(path)
        index = int(cell["key"].split()[1].split("-")[0])  # "points I-I": one learning rate per call
        record = cell["record"]
        done[grid[index]] = {**{s: unpack_array(record[s])[0] for s in SCORES}, "seconds": record["seconds"]}
    return grid, done


def main() -> None:
    grid, done = adam_points()
    summary = HERE / "open_summary.json"
    open_run = read_json(summary) if summary.exists() else None
    missing = [f"Adam lr {lr:g}" for lr in grid if lr not in done] + ([] if open_run else ["OPEN"])
    tuned = max(done, key=lambda lr: iqm(done[lr]["eval_return"])) if len(done) == len(grid) else None
    print("### Asterix-MinAtar: 16 seeds, 9,994,240 env steps (1220 updates of 8,192), this 2-core CPU\n")
    for score in SCORES:
        print(f"{score}\n\n| method | mean | IQM [95% CI] | s.e. | hours |\n|---|---|---|---|---|")
        if open_run:
            print(row("OPEN (released asterix_OPEN.npy)", open_run[score], open_run["train_seconds"]))
        for lr in grid:
            if lr in done:
                mark = " (tuned: best eval IQM)" if lr == tuned else ""
                print(row(f"Adam lr {lr:g}{mark}", done[lr][score], done[lr]["seconds"]))
        if tuned is not None and open_run:
            point, ci = aggregate_probability_of_improvement(
                [(np.asarray(open_run[score], float), np.asarray(done[tuned][score], float))])
            print(f"\nP(OPEN > tuned Adam) on {score} = {point:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]")
        print()
    if missing:
        print(f"Not finished yet: {', '.join(missing)}; no comparison is made before every one has.")


if __name__ == "__main__":
    main()
