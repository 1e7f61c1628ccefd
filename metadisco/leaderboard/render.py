"""A leaderboard's files: board.json (the report), board.md (its tables) and three figures, written atomically."""

from __future__ import annotations

from pathlib import Path

FIGURES = {"aggregate": "aggregate.png", "profiles": "profiles.png", "improvement": "improvement.png"}


def ranked(report: dict) -> list[str]:
    """The ranked entries, best first."""
    entries = report["entries"]
    return sorted((n for n in entries if entries[n]["rank"] is not None), key=lambda n: entries[n]["rank"])


def _ci(block: dict | None, key: str = "ci95") -> str:
    ci = block.get(key) if block else None
    return f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""


def rank_lines(report: dict) -> list[str]:
    """The short table: rank, entry, IQM [CI], P(> reference) [CI], optimality gap, envs."""
    score, ref = report["suite"]["score"], report["suite"]["reference"]
    agg = report["aggregate"][score]
    lines = [f"| rank | entry | IQM [95% CI] | P(> tuned {ref}) | optimality gap | envs |", "|---|---|---|---|---|---|"]
    for name in ranked(report):
        a = agg[name]
        p = "—" if name == ref or a["p_vs_reference"] is None else f"{a['p_vs_reference']:.2f}" \
            + _ci(a, "p_vs_reference_ci95")
        lines.append(f"| {report['entries'][name]['rank']} | {name} | {a['iqm']:.2f}{_ci(a)} | {p} | "
                     f"{a['optimality_gap']:.2f} | {a['envs']} |")
    return lines


def render_markdown(report: dict) -> str:
    suite, score = report["suite"], report["suite"]["score"]
    envs = list(report["envs"])
    out = [f"# Leaderboard: suite {suite['name']}", "",
           f"{suite['summary'] + '. ' if suite['summary'] else ''}Each entry's lr tuned over "
           f"{' / '.join(f'{s:g}' for s in suite['lr_scales'])} x its "
           f"preset's on {suite['selection_seeds']} selection seeds, reported at the best point on "
           f"{suite['report_seeds']} fresh seeds (base seed {suite['seed']}); scores normalised per env between the "
           f"random policy (0) and tuned {suite['reference']} (1). Ranked by {score}.", "", *rank_lines(report), ""]
    for other in report["aggregate"]:
        if other == score:
            continue
        agg = report["aggregate"][other]
        out += [f"On {other}: " + ", ".join(f"{n} {agg[n]['iqm']:.2f}" for n in ranked(report) if n in agg) + ".", ""]
    out += ["## Per env", "", f"Normalised IQM of {score} over the report seeds; † not held out (the entry was "
            "meta-trained or selected on it); n/a: cannot run there; …: not finished.", "",
            "| entry | " + " | ".join(envs) + " |", "|---|" + "---|" * len(envs)]
    for name in report["entries"]:
        cells = []
        for env in envs:
            row = report["envs"][env]["entries"][name]
            block = (row.get("scores") or {}).get(score) or {}
            if row["status"].startswith("cannot run"):
                cells.append("n/a")
            elif "normalised_iqm" in block:
                cells.append(f"{block['normalised_iqm']:.2f}" + ("" if row["held_out"] else " †"))
            elif row["status"] == "done":
                cells.append("no unit")
            else:
                cells.append("…")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out += ["", "## Entries", "", "| entry | what | source |", "|---|---|---|"]
    for name, entry in report["entries"].items():
        missing = f" (not run: {entry['missing']})" if "missing" in entry else ""
        out.append(f"| {name} | {entry['what']}{missing} | `{entry['source']}` |")
    reasons = sorted({row["status"] for env in envs for row in report["envs"][env]["entries"].values()
                      if row["status"].startswith("cannot run") and "is not here" not in row["status"]})
    if reasons:
        out += ["", "Cannot run:", *[f"- {r.removeprefix('cannot run: ')}" for r in reasons]]
    out += ["", "## Figures", "", *[f"![{k}]({v})" for k, v in FIGURES.items()], ""]
    return "\n".join(out)


def write_board(report: dict, out: Path) -> None:
    from metadisco.core.io import atomic_write_text, write_json
    from metadisco.figures import leaderboard as figures

    out.mkdir(parents=True, exist_ok=True)
    score, ref = report["suite"]["score"], report["suite"]["reference"]
    order = ranked(report)
    write_json(out / "board.json", report)
    atomic_write_text(out / "board.md", render_markdown(report))
    if order:
        figures.plot_aggregate(report["aggregate"][score], order, ref, score, out / FIGURES["aggregate"])
        figures.plot_profiles(report["profiles"][score], order, ref, score, out / FIGURES["profiles"])
        figures.plot_improvement(report["improvement"][score], order, score, out / FIGURES["improvement"])
