"""The ES mean's fitness on fresh seeds of several meta-training runs, on one axis.

    python analysis/compare_runs.py runs/a runs/b --out compare.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

from metadisco.analysis.figures import pyplot, save_figure
from metadisco.meta.rundir import RunDir


def mean_curve(lines: list[dict]) -> tuple[list[int], list[float]]:
    """(generations done, fitness of the ES mean) wherever the run scored its mean."""
    x, y = [], []
    if lines and lines[0].get("fitness_of_initial_mean") is not None:
        x.append(0)
        y.append(lines[0]["fitness_of_initial_mean"])
    for line in lines:
        if line.get("fitness_of_mean") is not None:
            x.append(line["generation"] + 1)
            y.append(line["fitness_of_mean"])
    return x, y


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run directories (each with metrics.jsonl)")
    parser.add_argument("--out", required=True, help="PNG file to write")
    args = parser.parse_args(argv)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    for run in args.runs:
        x, y = mean_curve(RunDir(run, writer=False).read_metrics())
        ax.plot(x, y, "o-", ms=3, label=Path(run).resolve().name)
    ax.set_xlabel("generations")
    ax.set_ylabel("fitness of the ES mean (fresh seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    print(save_figure(fig, args.out, dpi=110))


if __name__ == "__main__":
    main()
