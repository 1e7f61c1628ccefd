"""The methods an evaluation compares, and the meta-training run directories it can read.

A method is an objective under a short label: a built-in name (`ppo`, `dpo`), an objective file (labelled by
its file name without suffix) or a meta-training run directory (labelled by the directory's name), resolved by
`metadisco.objectives.resolve` as every command does (its docstring states the run-directory contract).
`LABEL=SOURCE` gives a method its own label, e.g. two `distil` outputs that are both `distilled.msgpack`:
`parametric=dist_p/distilled.msgpack,symbolic=dist_s/distilled.msgpack`.
RUN_DIR/config.yaml holds a top-level `held_out_envs: [ids]` list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metadisco.core.errors import SettingError, UserError
from metadisco.core.io import read_yaml
from metadisco.objectives import Objective
from metadisco.objectives.resolve import (  # noqa: F401 (the run-directory names, for callers of this module)
    RUN_BEST_OBJECTIVE,
    RUN_CONFIG,
    RUN_OBJECTIVE,
    resolve,
    run_objective_file,
)


@dataclass(frozen=True)
class Method:
    label: str  # the name in tables and figures
    source: str  # what the user gave: a built-in name, a file or a run directory
    objective: Objective
    meta: Any  # meta-parameter pytree


_LABEL = re.compile(r"[A-Za-z0-9_.+-]+")


def split_label(name_or_path: str) -> tuple[str | None, str]:
    """`LABEL=SOURCE` -> (LABEL, SOURCE); any other text -> (None, text). An existing path containing `=` is read
    as a path: the label prefix only applies when the whole text is not a file or directory."""
    label, sep, source = name_or_path.partition("=")
    if not sep or Path(name_or_path).exists():
        return None, name_or_path
    if not _LABEL.fullmatch(label) or not source:
        raise UserError(f"method {name_or_path!r}: give LABEL=SOURCE with a label of letters, digits, '_', "
                        "'-', '.' or '+' and a built-in name, objective file or run directory after '='")
    return label, source


def without_label(name_or_path: str) -> str:
    """What `LABEL=SOURCE` stands for (SOURCE); any other text unchanged."""
    return split_label(name_or_path)[1]


def method_from(name_or_path: str) -> Method:
    """A method from a built-in name, an objective file or a run directory, optionally as `LABEL=SOURCE`."""
    label, source = split_label(name_or_path)
    r = resolve(source)
    return Method(label or r.label, r.source if label is None else name_or_path, r.objective, r.meta)


def held_out_envs(run_dir: str | Path) -> list[str]:
    """The `held_out_envs` list of a run directory's config.yaml."""
    config_file = Path(run_dir) / RUN_CONFIG
    if not config_file.is_file():
        raise SettingError(f"run directory {str(run_dir)!r} has no {RUN_CONFIG}; give envs ID[,ID...]", ("envs",))
    config = read_yaml(config_file)
    envs = config.get("held_out_envs") if isinstance(config, dict) else None
    if not envs:
        raise SettingError(f"{config_file} has no held_out_envs list; give envs ID[,ID...]", ("envs",))
    if not isinstance(envs, list) or not all(isinstance(e, str) for e in envs):
        raise UserError(f"held_out_envs in {config_file} must be a list of env ids, got {envs!r}")
    return envs


def trained_with(objective: str) -> dict:
    """The `train` settings every task of a meta-training run directory's config.yaml gives alike (plain values,
    as written), i.e. what its objective was meta-trained with beyond its presets; {} for an objective file or a
    built-in name, or where no setting is given alike by every task."""
    run_dir = Path(without_label(objective))
    if not (run_dir / RUN_CONFIG).is_file():
        return {}
    config = read_yaml(run_dir / RUN_CONFIG)
    tasks = config.get("tasks") if isinstance(config, dict) else None
    if not isinstance(tasks, list) or not tasks or not all(isinstance(t, dict) for t in tasks):
        return {}
    trains = [t.get("train") or {} for t in tasks]
    if not all(isinstance(t, dict) for t in trains):
        return {}
    return {k: v for k, v in trains[0].items() if all(k in t and t[k] == v for t in trains[1:])}


def resolve_methods(objective: str, baselines: list[str]) -> list[Method]:
    """The evaluated objective first, then each baseline; labels must be distinct."""
    methods = [method_from(objective)] + [method_from(b) for b in baselines]
    seen: dict[str, str] = {}
    for m in methods:
        if m.label in seen:
            raise UserError(f"two methods are both called {m.label!r} ({seen[m.label]!r} and {m.source!r}); "
                            "leave the objective out of --baselines, or label one as LABEL=SOURCE")
        seen[m.label] = m.source
    return methods
