"""The OBJECTIVE argument of `plot` / `distil`: `metadisco.objectives.resolve`, the one resolver of every
command (a built-in name, an objective file, or a run directory, which stands for the objective it kept by
meta-validation when it has one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metadisco.objectives import Objective
from metadisco.objectives.resolve import resolve


def resolve_input(text: str) -> tuple[Objective, Any, str, Path | None]:
    """(objective, meta_params, label, run_dir or None)."""
    r = resolve(text)
    return r.objective, r.meta, r.label, r.run_dir
