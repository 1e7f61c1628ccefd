"""The OBJECTIVE argument of `plot` / `distil`: a built-in name, an objective file, or a run directory (which
holds objective.msgpack, maybe objective_best.msgpack, and metrics.jsonl): a run directory stands for the
objective it kept by meta-validation when it has one (`run_objective_file`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metadisco.evaluate.methods import run_objective_file
from metadisco.objectives import Objective
from metadisco.objectives.resolve import resolve_objective


def resolve_input(text: str) -> tuple[Objective, Any, str, Path | None]:
    """(objective, meta_params, label, run_dir or None)."""
    path = Path(text)
    if path.is_dir():
        objective, meta = resolve_objective(str(run_objective_file(path)))
        return objective, meta, path.resolve().name, path
    objective, meta = resolve_objective(text)
    return objective, meta, path.stem if path.suffix else text, None
