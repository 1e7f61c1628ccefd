"""The ES mean's fitness on fresh seeds of several meta-training runs, on one axis.

    python analysis/compare_runs.py runs/a runs/b --out compare.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

from metadisco import RunDir
from metadisco.figures import pyplot, save_figure
from metadisco.figures.meta_curve import mean_curve


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
