"""eval.json's layout, and the one reader of the files `metadisco evaluate` writes, old and new.

    {"settings": {...}, "envs": {env: {method: {...}}}, "aggregate": {...}}

Files written before the envs had their own key (the early eval.json files committed under results/) held each env
id beside "settings" and "aggregate": `{"settings", env_1, ..., env_n, "aggregate"}`. `in_layout`
reads either into the layout above, so no reader filters section names out of the env ids itself.
"""

from __future__ import annotations

import json
from pathlib import Path

from metadisco.core.errors import UserError

SECTIONS = ("settings", "envs", "aggregate")  # the keys of a report, in the order eval.json writes them
_OLD_SECTIONS = ("settings", "aggregate")  # the keys of an old report that are not env ids


def in_layout(report: dict) -> dict:
    """The report `report` (parsed eval.json, either layout) as {"settings", "envs", "aggregate"}, envs in the
    order the file gives them; a report already in this layout is returned as an equal new dict."""
    if not isinstance(report, dict) or "settings" not in report or "aggregate" not in report:
        found = sorted(report) if isinstance(report, dict) else type(report).__name__
        raise UserError(f"not an eval.json report: expected the keys settings, envs and aggregate, got {found}")
    if isinstance(report.get("envs"), dict) and set(report) == set(SECTIONS):
        return {name: report[name] for name in SECTIONS}
    envs = {key: value for key, value in report.items() if key not in _OLD_SECTIONS}
    return {"settings": report["settings"], "envs": envs, "aggregate": report["aggregate"]}


def read_report(path: str | Path) -> dict:
    """eval.json at `path` (a file, or the evaluation directory holding it) in the current layout."""
    path = Path(path)
    if path.is_dir():
        path = path / "eval.json"
    if not path.is_file():
        raise UserError(f"no eval.json at {path}; give an evaluation directory or its eval.json")
    try:
        report = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path} is not valid JSON ({e}); it should be an eval.json that `evaluate` wrote") from None
    try:
        return in_layout(report)
    except UserError as e:
        raise UserError(f"{path}: {e}") from None
