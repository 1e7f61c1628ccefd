"""The OBJECTIVE argument of `plot` / `distil`: a built-in name, an objective file, or a run directory (which
holds objective.msgpack and metrics.jsonl)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metadisco.errors import UserError
from metadisco.objectives import Objective
from metadisco.objectives.resolve import resolve_objective


def resolve_input(text: str) -> tuple[Objective, Any, str, Path | None]:
    """(objective, meta_params, label, run_dir or None)."""
    path = Path(text)
    if path.is_dir():
        file = path / "objective.msgpack"
        if not file.is_file():
            raise UserError(f"{text!r} is a directory without objective.msgpack; give a run directory, an "
                            "objective file or a built-in name (ppo, dpo)")
        objective, meta = resolve_objective(str(file))
        return objective, meta, path.resolve().name, path
    objective, meta = resolve_objective(text)
    return objective, meta, path.stem if path.suffix else text, None
