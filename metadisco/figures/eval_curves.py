"""Figures of an evaluation: one learning-curve figure per env and one aggregate figure (PNG, matplotlib Agg)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metadisco.figures import pyplot, save_figure

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


DPI = 150


def _save(fig, path: Path) -> None:
    save_figure(fig, path, DPI)


def env_file_name(env_id: str) -> str:
    return "curves_" + env_id.replace("/", "_") + ".png"


def plot_env_curves(env_id: str, entries: dict[str, dict], seeds: int, path: Path) -> None:
    """Mean learning curve of each method with its 95% bootstrap band over seeds; `entries` as in eval.json."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for i, (label, entry) in enumerate(entries.items()):
        curve = entry["curve"]
        steps = np.asarray(curve["env_steps"], dtype=float)
        color = COLORS[i % len(COLORS)]
        mean = np.asarray(curve["mean"], dtype=float)
        note = f" ({entry['finite_seeds']}/{entry['seeds']} finished)" if entry["finite_seeds"] < entry["seeds"] \
            else ""
        ax.plot(steps, mean, color=color, lw=1.8, label=f"{label}{note}")
        ax.fill_between(steps, np.asarray(curve["ci95_low"], dtype=float), np.asarray(curve["ci95_high"], dtype=float),
                        color=color, alpha=0.2, lw=0)
    ax.set_title(f"{env_id}: mean over {seeds} seeds, 95% bootstrap CI")
    ax.set_xlabel("environment steps (per seed)")
    ax.set_ylabel("return of finished episodes")
    ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 3))
    ax.grid(alpha=0.3)
    ax.legend(loc="best", frameon=False)
    _save(fig, path)


def plot_aggregate(aggregate: dict, methods: list[str], path: Path) -> None:
    """Left: IQM of normalised scores per method with its CI. Right: P(objective > baseline) with its CI."""
    plt = pyplot()
    improvement = aggregate["probability_of_improvement"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 0.6 * max(len(methods), len(improvement)) + 2.0))
    blocks = [(m, aggregate["iqm_normalized"].get(m)) for m in methods]
    shown = [(m, b) for m, b in blocks if b is not None]
    for y, (label, block) in enumerate(shown):
        color = COLORS[methods.index(label) % len(COLORS)]
        if block["ci95"] is not None:
            left.plot(block["ci95"], [y, y], color=color, lw=8, alpha=0.35, solid_capstyle="butt")
        left.plot([block["iqm"]], [y], "|", color=color, ms=18, mew=2.5)
    left.set_yticks(range(len(shown)), [m for m, _ in shown])
    left.set_ylim(len(shown) - 0.3, -0.7)  # first method (the objective) on top
    left.axvline(1.0, color="k", lw=0.8, ls=":")
    envs = ", ".join(aggregate["normalized_envs"]) or "no env"
    left.set_title(f"IQM of normalised score (ppo = 1, random = 0)\nover {envs}", fontsize=10)
    left.set_xlabel("normalised score: IQM and 95% CI")
    if not shown:
        left.text(0.5, 0.5, "no normalisable env\n(ppo not evaluated?)", ha="center", va="center",
                  transform=left.transAxes)
    for y, block in enumerate(improvement.values()):
        if block["ci95"] is not None:
            right.plot(block["ci95"], [y, y], color="#555555", lw=8, alpha=0.35, solid_capstyle="butt")
        right.plot([block["p"]], [y], "|", color="k", ms=18, mew=2.5)
    right.set_yticks(range(len(improvement)), [f"P({name})" for name in improvement])
    right.set_ylim(len(improvement) - 0.3, -0.7)
    right.set_xlim(0.0, 1.0)
    right.axvline(0.5, color="k", lw=0.8, ls=":")
    right.set_title("probability of improvement, averaged over envs", fontsize=10)
    right.set_xlabel("P(X > Y): point estimate and 95% CI")
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)


def redraw(report: dict, out: Path) -> list[Path]:
    """The figures `metadisco evaluate` drew, again, from its eval.json alone (`report`, in the current layout:
    `metadisco.evaluate.layout.read_report`): one learning-curve figure per env and the aggregate, into `out`. This
    is why an evaluation folder need not keep its PNGs."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    envs = report["envs"]
    paths = []
    for env_id, entries in envs.items():
        path = out / env_file_name(env_id)
        plot_env_curves(env_id, entries, report["settings"]["seeds"], path)
        paths.append(path)
    methods = list(next(iter(envs.values()))) if envs else []
    path = out / "aggregate.png"
    plot_aggregate(report["aggregate"], methods, path)
    return [*paths, path]
