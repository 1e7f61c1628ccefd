"""eval.json's layout, and the one reader of the files `metadisco evaluate` writes, of every schema.

    {"schema": 2, "settings": {...}, "envs": {env: {method: {...}}}, "aggregate": {...}}

`read_report` gives any version's file in the current layout (without "schema": a property of the file):
`metadisco.runs.migrate.upgrade_report` knows the older ones, so no reader filters section names out of env ids
itself. `file_record` is what `evaluate` writes.
"""

from __future__ import annotations

import json
from pathlib import Path

from metadisco.core.errors import UserError
from metadisco.runs.migrate import REPORT_SCHEMA, REPORT_SECTIONS, upgrade_report

SECTIONS = REPORT_SECTIONS  # the sections of a report, in the order eval.json writes them (after its schema)


def in_layout(report: dict) -> dict:
    """The report `report` (a parsed eval.json of any schema) as {"settings", "envs", "aggregate"}."""
    return upgrade_report(report, "the report")


def file_record(report: dict) -> dict:
    """What eval.json holds of a report in the current layout: its schema version first, then its sections."""
    return {"schema": REPORT_SCHEMA, **{name: report[name] for name in SECTIONS}}


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
    return upgrade_report(report, str(path))
