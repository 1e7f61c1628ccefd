"""Turn the OBJECTIVE argument of the command line into an objective and its meta-parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metadisco.errors import UserError, unknown_name_error
from metadisco.objectives.objective import BUILTIN_OBJECTIVES, Objective


def resolve_objective(name_or_path: str) -> tuple[Objective, Any]:
    """A built-in name (`ppo`, `dpo`) or the path of an objective file -> (objective, meta_params)."""
    if name_or_path in BUILTIN_OBJECTIVES:
        objective = BUILTIN_OBJECTIVES[name_or_path]
        return objective, objective.zero_meta()
    path = Path(name_or_path)
    if path.suffix or path.exists() or "/" in name_or_path:
        if not path.is_file():
            raise UserError(f"no objective file {name_or_path!r}; give a built-in name "
                            f"({', '.join(BUILTIN_OBJECTIVES)}) or an existing objective file")
        try:
            from metadisco.objectives.files import load_objective
        except ImportError:
            raise UserError("objective files are not supported in this version") from None
        return load_objective(path)
    raise unknown_name_error("objective", name_or_path, list(BUILTIN_OBJECTIVES))
