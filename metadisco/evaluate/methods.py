"""The methods an evaluation compares, and the meta-training run directories it can read.

A method is an objective under a short label: a built-in name (`ppo`, `dpo`), an objective file (labelled by
its file name without suffix) or a meta-training run directory (labelled by the directory's name).

Run-directory contract (written by `metadisco meta-train`): RUN_DIR/objective_best.msgpack is the objective the
run kept by meta-validation (when the config has a validation section), RUN_DIR/objective.msgpack the final ES
mean; a run directory stands for the kept objective when there is one, else the ES mean (pass
RUN_DIR/objective.msgpack for the ES mean explicitly). RUN_DIR/config.yaml holds a top-level
`held_out_envs: [ids]` list.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metadisco.errors import UserError
from metadisco.io import read_yaml
from metadisco.objectives import Objective
from metadisco.objectives.resolve import resolve_objective

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
class Method:
    label: str  # the name in tables and figures
    source: str  # what the user gave: a built-in name, a file or a run directory
    objective: Objective
    meta: Any  # meta-parameter pytree


def method_from(name_or_path: str) -> Method:
    """A method from a built-in name, an objective file or a run directory."""
    path = Path(name_or_path)
    if path.is_dir():
        objective, meta = resolve_objective(str(run_objective_file(path)))
        return Method(path.resolve().name, name_or_path, objective, meta)
    objective, meta = resolve_objective(name_or_path)
    label = name_or_path if not (path.suffix or "/" in name_or_path) else path.stem
    return Method(label, name_or_path, objective, meta)


def held_out_envs(run_dir: str | Path) -> list[str]:
    """The `held_out_envs` list of a run directory's config.yaml."""
    config_file = Path(run_dir) / RUN_CONFIG
    if not config_file.is_file():
        raise UserError(f"run directory {str(run_dir)!r} has no {RUN_CONFIG}; give --envs ID[,ID...]")
    config = read_yaml(config_file)
    envs = config.get("held_out_envs") if isinstance(config, dict) else None
    if not envs:
        raise UserError(f"{config_file} has no held_out_envs list; give --envs ID[,ID...]")
    if not isinstance(envs, list) or not all(isinstance(e, str) for e in envs):
        raise UserError(f"held_out_envs in {config_file} must be a list of env ids, got {envs!r}")
    return envs


def resolve_methods(objective: str, baselines: list[str]) -> list[Method]:
    """The evaluated objective first, then each baseline; labels must be distinct."""
    methods = [method_from(objective)] + [method_from(b) for b in baselines]
    seen: dict[str, str] = {}
    for m in methods:
        if m.label in seen:
            raise UserError(f"two methods are both called {m.label!r} ({seen[m.label]!r} and {m.source!r}); "
                            "leave the objective out of --baselines, or rename one file")
        seen[m.label] = m.source
    return methods
