"""The figure of a PBT run (`metadisco pbt`): every agent's searched settings and return over training, the
best agent's ancestry (whose weights it carried in each round) drawn in bold."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metadisco.figures import pyplot, save_figure

DPI = 150


def plot_pbt(lineage: dict, ancestry: list[int], title: str, path: str | Path) -> Path:
    """One panel per searched setting (its value in each round, a step per agent) and one of the round returns;
    `lineage` as in lineage.json, `ancestry` the best agent's line (`metadisco.search.pbt.run.ancestry`)."""
    plt = pyplot()
    names = list(lineage["hyper"])
    scores = np.array([[np.nan if s is None else s for s in row] for row in lineage["scores"]], float)  # [R, N]
    rounds, agents = scores.shape
    per_agent = np.asarray(lineage["env_steps"], float) / agents
    starts = np.concatenate([[0.0], per_agent[:-1]])
    fig, axes = plt.subplots(1, len(names) + 1, figsize=(5.0 * (len(names) + 1), 3.8), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for ax, name in zip(axes[0], names, strict=False):
        values = np.asarray(lineage["hyper"][name], float)  # [R, N]
        for a in range(agents):
            ax.step(np.append(starts, per_agent[-1]), np.append(values[:, a], values[-1, a]), where="post",
                    color=cmap(a % 10), lw=0.8, alpha=0.6)
        best = [values[r, ancestry[r]] for r in range(rounds)]
        ax.step(np.append(starts, per_agent[-1]), np.append(best, best[-1]), where="post", color="k", lw=2.2,
                label="best agent's schedule")
        if np.all(values > 0) and values.max() / values.min() > 20:
            ax.set_yscale("log")
        ax.set_ylabel(name)
        ax.set_xlabel("environment steps (per agent)")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, loc="best", fontsize=8)
    ax = axes[0][-1]
    for a in range(agents):
        ax.plot(per_agent, scores[:, a], color=cmap(a % 10), lw=0.8, alpha=0.6)
    ax.plot(per_agent, [scores[r, ancestry[r]] for r in range(rounds)], color="k", lw=2.2, label="best agent's line")
    ax.set_xlabel("environment steps (per agent)")
    ax.set_ylabel("return in the round")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="best", fontsize=8)
    fig.suptitle(title)
    return save_figure(fig, path, DPI)
