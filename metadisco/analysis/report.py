"""`metadisco report RUN_DIR`: one markdown page (RUN_DIR/report.md) with the meta-training curve, the
objective's figures, the evaluation table if one exists and the distilled forms.

Figures are drawn into RUN_DIR/figures/ when missing; with no distilled.json anywhere under RUN_DIR, a
parametric distillation (seconds, no training) is run into RUN_DIR/distil/, unless the drift has no
meta-parameters (it was not learned, as in a run that learns only the optimiser).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax

from metadisco.analysis.inputs import resolve_input
from metadisco.core.errors import UserError
from metadisco.core.io import atomic_write_text
from metadisco.evaluate.methods import run_objective_file


def _rel(path: Path, root: Path) -> str:
    return str(Path(path).resolve().relative_to(root.resolve()))


def _distilled_section(files: list[Path], root: Path) -> list[str]:
    lines = ["## Distilled forms", ""]
    lines += ["| file | method | family | R² | expression |", "|---|---|---|---|---|"]
    details = []
    for file in files:
        try:
            d = json.loads(file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise UserError(f"damaged JSON file {file}") from None
        params = ", ".join(f"{k} = {v:.4g}" for k, v in (d.get("params") or {}).items())
        r2 = "?" if d.get("r2") is None else f"{d['r2']:.4f}"
        family = f"{d.get('family', '?')} ({params})" if params else d.get("family", "?")
        readable = d.get("readable", d.get("expression"))
        lines.append(f"| `{_rel(file, root)}` | {d.get('method', '?')} | {family} | {r2} | `{readable}` |")
        if d.get("latex"):
            details.append(f"$$ \\mathrm{{drift}}(r, A) = {d['latex']} $$")
        ev = d.get("evaluation")
        if ev:
            details.append(f"Retained performance on {ev['env']} ({ev['seeds']} seeds, {ev['timesteps']} steps): "
                           f"original {ev['original']['mean']}, distilled {ev['distilled']['mean']}, "
                           f"retained {ev['retained']}.")
    return lines + [""] + details + [""]


def _num(value) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def write_report(run_dir: Path) -> Path:
    from metadisco.analysis.distil import distil, grid_target, write_distilled
    from metadisco.analysis.objective_figures import plot_objective
    from metadisco.figures.meta_curve import POPULATION_CURVE, mean_curve
    from metadisco.runs.rundir import RunDir

    run_dir = Path(run_dir)
    objective, meta, label, _ = resolve_input(str(run_dir))
    figures = run_dir / "figures"
    paths = plot_objective(objective, meta, label, figures, run_dir)  # as `metadisco plot RUN_DIR` draws
    curve = next((p for p in paths if p.name == POPULATION_CURVE), None)
    paths = [p for p in paths if p != curve]
    lines = [f"# Report: {label}", "", f"Objective: `{json.dumps(objective.to_spec())}`", ""]
    if curve is not None:
        rows = RunDir(run_dir, writer=False).read_metrics()
        last = rows[-1]
        lines += ["## Meta-training", "", f"{len(rows)} generations; last: fitness_mean "
                  f"{_num(last.get('fitness_mean'))}, fitness_max {_num(last.get('fitness_max'))}.", ""]
        done, scores = mean_curve(rows)
        if done:
            start = f" ({_num(scores[0])} at the start)" if done[0] == 0 and len(done) > 1 else ""
            lines += [f"The ES mean on fresh seeds (the point meta-training keeps): {_num(scores[-1])} after "
                      f"{done[-1]} generations{start}.", ""]
        lines += [f"![meta-training curve]({_rel(curve, run_dir)})", ""]
    lines += ["## Objective figures", ""]
    for path in paths:
        lines += [f"### {path.stem.replace('_', ' ')}", "", f"![{path.stem}]({_rel(path, run_dir)})", ""]
    main_eval = run_dir / "eval" / "eval.md"  # where `meta-train` tells you to evaluate: first, then any others
    evals = sorted(run_dir.rglob("eval.md"), key=lambda p: (p != main_eval, str(p)))
    if evals:
        lines += ["## Evaluation", ""]
        for file in evals:
            lines += [f"From `{_rel(file, run_dir)}`:", "", file.read_text().strip(), ""]
    distilled = sorted(run_dir.rglob("distilled.json"))
    if not distilled and not jax.tree.leaves(meta["drift"]):
        # A drift with no meta-parameters (PPO's in an optimiser-only run) was not learned: a fit would only
        # restate its closed form.
        lines += ["## Distilled forms", "", f"The drift ({objective.drift.name}) has no meta-parameters: it was not "
                  "learned, so there is nothing to distil.", ""]
    else:
        if not distilled:
            result = distil(grid_target(objective, meta), "parametric")
            write_distilled(run_dir / "distil", objective, meta, result, str(run_objective_file(run_dir)))
            distilled = [run_dir / "distil" / "distilled.json"]
        lines += _distilled_section(distilled, run_dir)
    out = run_dir / "report.md"
    atomic_write_text(out, "\n".join(lines).rstrip() + "\n")
    return out
