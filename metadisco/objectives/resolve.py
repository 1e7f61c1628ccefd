"""The OBJECTIVE argument of every command: a built-in name, an objective file, a meta-training run directory or
`catalogue:NAME`, a discovered objective that ships with metadisco (`metadisco catalogue` lists them).

Run-directory contract (written by `metadisco meta-train`): RUN_DIR/objective_best.msgpack is the objective the
run kept by meta-validation (when the config has a validation section), RUN_DIR/objective.msgpack the final ES
mean; a run directory stands for the kept objective when there is one, else the ES mean (pass
RUN_DIR/objective.msgpack for the ES mean explicitly). RUN_DIR/config.yaml holds the resolved config.

A built-in name wins over a directory of the same name (write ./ppo for that). Labels (for tables, figures
and messages): a built-in name is its own label, a file its name without suffix, a run directory its name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metadisco.core.errors import UserError, unknown_name_error
from metadisco.core.shipped import CATALOGUE_PREFIX, catalogue_file
from metadisco.objectives.objective import BUILTIN_OBJECTIVES, Objective

RUN_OBJECTIVE = "objective.msgpack"
RUN_BEST_OBJECTIVE = "objective_best.msgpack"
RUN_CONFIG = "config.yaml"


def run_objective_file(run_dir: str | Path) -> Path:
    """The objective a run directory stands for: the validated best if the run kept one, else the ES mean."""
    run_dir = Path(run_dir)
    for name in (RUN_BEST_OBJECTIVE, RUN_OBJECTIVE):
        if (run_dir / name).is_file():
            return run_dir / name
    raise UserError(f"run directory {str(run_dir)!r} has no {RUN_OBJECTIVE}; give a meta-training run directory, "
                    "an objective file or a built-in name (ppo, dpo)")


@dataclass(frozen=True)
class Resolved:
    """What an OBJECTIVE argument stands for."""

    label: str  # the short name in tables and figures
    source: str  # what the user gave
    objective: Objective
    meta: Any  # meta-parameter pytree
    file: Path | None = None  # the objective file read (None for a built-in name)
    run_dir: Path | None = None  # the run directory given (None otherwise)


def resolve(name_or_path: str) -> Resolved:
    """A built-in name (`ppo`, `dpo`), an objective file or a run directory -> `Resolved`; else a `UserError`."""
    if name_or_path.startswith(CATALOGUE_PREFIX):  # a discovery that ships with metadisco
        file = catalogue_file(name_or_path)
        return Resolved(name_or_path[len(CATALOGUE_PREFIX):], name_or_path, *_load(file), file=file)
    path = Path(name_or_path)
    if name_or_path in BUILTIN_OBJECTIVES:  # a name first: a directory called ppo is ./ppo
        objective = BUILTIN_OBJECTIVES[name_or_path]
        return Resolved(name_or_path, name_or_path, objective, objective.zero_meta())
    if path.is_dir():
        file = run_objective_file(path)
        return Resolved(path.resolve().name, name_or_path, *_load(file), file=file, run_dir=path)
    if path.suffix or path.exists() or "/" in name_or_path:
        if not path.is_file():
            raise UserError(f"no objective file {name_or_path!r}; give a built-in name "
                            f"({', '.join(BUILTIN_OBJECTIVES)}), an objective file or a meta-training run directory")
        return Resolved(path.stem, name_or_path, *_load(path), file=path)
    raise unknown_name_error("objective", name_or_path, list(BUILTIN_OBJECTIVES))


def _load(path: Path) -> tuple[Objective, Any]:
    from metadisco.objectives.files import load_objective

    return load_objective(path)


def resolve_objective(name_or_path: str) -> tuple[Objective, Any]:
    """`resolve(name_or_path)` as (objective, meta_params)."""
    resolved = resolve(name_or_path)
    return resolved.objective, resolved.meta
