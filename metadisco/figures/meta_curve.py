"""Figures of a meta-training run, from its metrics.jsonl lines (`metadisco.runs.rundir.RunDir.read_metrics`).

    meta_curve.png         the population's fitness (mean, min-max band) per generation and the ES mean's on
                           fresh seeds; drawn into the run directory at the end of `meta-train`
    population_curve.png   the same figure, titled with the run's name, drawn by `plot RUN_DIR` (and so by
                           `report`) beside the objective's figures, also while the run goes on
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metadisco.figures import pyplot, save_figure

POPULATION_CURVE = "population_curve.png"


def mean_curve(lines: list[dict]) -> tuple[list[int], list[float]]:
    """(generations done, fitness of the ES mean) wherever the run scored its mean on fresh seeds."""
    x, y = [], []
    if lines and lines[0].get("fitness_of_initial_mean") is not None:
        x.append(0)
        y.append(lines[0]["fitness_of_initial_mean"])
    for line in lines:
        if line.get("fitness_of_mean") is not None:
            x.append(line["generation"] + 1)
            y.append(line["fitness_of_mean"])
    return x, y


def meta_curve(lines: list[dict], fitness_name: str | None, path: str | Path, title: str | None = None) -> Path:
    """The population's fitness per generation and the ES mean's on fresh seeds, into `path`."""
    plt = pyplot()

    def col(key):
        return np.asarray([np.nan if x.get(key) is None else x[key] for x in lines], float)

    g = np.asarray([x["generation"] for x in lines]) + 1  # generations done
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.fill_between(g, col("fitness_min"), col("fitness_max"), alpha=0.2, label="population min-max")
    ax.plot(g, col("fitness_mean"), label="population mean")
    mx, my = mean_curve(lines)
    if mx:
        ax.plot(mx, my, "o-", color="black", label="ES mean, fresh seeds")
    ax.set_xlabel("generations")
    ax.set_ylabel(f"fitness ({fitness_name})" if fitness_name else "fitness")
    if title:
        ax.set_title(f"meta-training: {title}", fontsize=10)
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path, dpi=100, tight=False)

