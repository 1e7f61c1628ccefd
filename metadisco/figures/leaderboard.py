"""Figures of a leaderboard (`metadisco.leaderboard`), from its report's plain data: the aggregate IQM with CIs,
the performance profiles and the probability-of-improvement matrix (rliable's three; Agarwal et al. 2021)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metadisco.figures import pyplot, save_figure

DPI = 150


def plot_aggregate(aggregate: dict, order: list[str], reference: str, score: str, path: Path) -> None:
    """Horizontal bars: each entry's IQM of normalised scores with its 95% CI, best at the top."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 0.32 * len(order) + 1.2))
    y = np.arange(len(order))[::-1]
    iqm = [aggregate[n]["iqm"] for n in order]
    low = [iqm[i] - (aggregate[n]["ci95"] or [iqm[i]] * 2)[0] for i, n in enumerate(order)]
    high = [(aggregate[n]["ci95"] or [iqm[i]] * 2)[1] - iqm[i] for i, n in enumerate(order)]
    colors = ["#d62728" if n == reference else "#1f77b4" for n in order]
    ax.barh(y, iqm, xerr=[low, high], color=colors, alpha=0.8, capsize=2)
    ax.set_yticks(y, order, fontsize=8)
    ax.axvline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xlabel(f"IQM of {score} normalised (random 0, tuned {reference} 1), 95% CI")
    save_figure(fig, path, DPI)
    plt.close(fig)


def plot_profiles(profiles: dict, order: list[str], reference: str, score: str, path: Path) -> None:
    """Fraction of runs scoring above tau, per entry."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    taus = profiles["taus"]
    cmap = plt.get_cmap("tab20")
    for i, name in enumerate(order):
        ax.plot(taus, profiles[name], lw=2.2 if name == reference else 1.2, color="k" if name == reference
                else cmap(i % 20), label=name)
    ax.set_xlabel(f"normalised {score} tau")
    ax.set_ylabel("fraction of runs > tau")
    ax.legend(fontsize=6, ncol=2, frameon=False)
    save_figure(fig, path, DPI)
    plt.close(fig)


def plot_improvement(matrix: dict, order: list[str], score: str, path: Path) -> None:
    """P(row > column), the mean over the envs both ran of the Mann-Whitney statistic."""
    plt = pyplot()
    n = len(order)
    values = np.array([[np.nan if matrix[a][b] is None else matrix[a][b] for b in order] for a in order], float)
    fig, ax = plt.subplots(figsize=(0.42 * n + 2.5, 0.42 * n + 1.5))
    image = ax.imshow(values, cmap="RdBu", vmin=0, vmax=1)
    ax.set_xticks(range(n), order, rotation=90, fontsize=7)
    ax.set_yticks(range(n), order, fontsize=7)
    for i in range(n):
        for j in range(n):
            if np.isfinite(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=5)
    ax.set_title(f"P(row > column), {score}", fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.04)
    save_figure(fig, path, DPI)
    plt.close(fig)
