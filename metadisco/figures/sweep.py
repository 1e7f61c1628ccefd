"""Figures of a hyperparameter sweep (`metadisco sweep`): final return against each searched setting, and the
learning curves of the points of a one-setting sweep."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metadisco.figures import pyplot, save_figure

DPI = 150


def plot_sweep(summary: dict, path: str | Path) -> Path:
    """One panel per searched setting: every seed's final return (dots) and each point's IQM with its 95%
    bootstrap CI (bars; in a one-setting sweep a line through them), the best point starred. A one-setting
    sweep adds its learning curves (mean over seeds), coloured by the setting's value."""
    plt = pyplot()
    names = list(summary["space"])
    points = summary["points"]
    curves = len(names) == 1
    fig, axes = plt.subplots(1, len(names) + curves, figsize=(5.2 * (len(names) + curves), 4.0), squeeze=False)
    best = summary["best"]["index"]
    score = summary.get("score", "final_return")  # what the IQMs are of; older sweeps ranked the final return
    for ax, name in zip(axes[0], names, strict=False):
        spec = summary["space"][name]
        x = np.array([p["hyper"][name] for p in points])
        for p, xv in zip(points, x, strict=True):
            seeds = np.asarray(p[score], float)
            ax.plot(np.full(seeds.shape, xv), seeds, ".", color="0.6", ms=4, zorder=1)
        iqm = np.array([p["iqm"] if p["iqm"] is not None else np.nan for p in points])
        lo = np.array([p["ci95"][0] if p["ci95"] else np.nan for p in points])
        hi = np.array([p["ci95"][1] if p["ci95"] else np.nan for p in points])
        order = np.argsort(x)
        ax.errorbar(x[order], iqm[order], yerr=[iqm[order] - lo[order], hi[order] - iqm[order]], fmt="o",
                    ls="-" if len(names) == 1 else "none", color="#1f77b4", capsize=3, zorder=2, label="IQM, 95% CI")
        ax.plot([x[best]], [iqm[best]], "*", color="#d62728", ms=14, zorder=3,
                label=f"best: {name} = {x[best]:.3g}")
        if isinstance(spec, dict) and spec.get("log") or (isinstance(spec, list) and min(spec) > 0
                                                           and max(spec) / min(spec) >= 100):
            ax.set_xscale("log")
        ax.set_xlabel(name)
        ax.set_ylabel("deterministic episodes' return" if score == "eval_return" else "final return")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, loc="best")
    if curves:
        ax = axes[0][-1]
        name = names[0]
        values = np.array([p["hyper"][name] for p in points])
        scale = np.log(values) if np.all(values > 0) else values
        span = np.ptp(scale) or 1.0
        cmap = plt.get_cmap("viridis")
        steps = np.asarray(summary["curve_env_steps"], float)
        for p, v in zip(points, scale, strict=True):
            ax.plot(steps, np.asarray(p["curve"], float), color=cmap((v - scale.min()) / span), lw=1.5,
                    label=f"{p['hyper'][name]:.2g}")
        ax.set_xlabel("environment steps (per seed)")
        ax.set_ylabel("return (mean over seeds)")
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 3))
        ax.grid(alpha=0.3)
        ax.legend(title=name, frameon=False, fontsize=7, ncol=2, loc="best")
    fig.suptitle(f"{summary['env']}: {summary['search']} sweep, {len(points)} points x {summary['seeds']} seeds, "
                 f"{summary['timesteps']:,} steps each, one compiled call")
    return save_figure(fig, path, DPI)
