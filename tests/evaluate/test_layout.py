"""eval.json's layout: files of the old layout (env ids beside "settings" and "aggregate") and of the new one
({"settings", "envs", "aggregate"}) read into the same report."""

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.evaluate.layout import SECTIONS, file_record, in_layout, read_report
from metadisco.evaluate.summary import render_markdown
from metadisco.runs.migrate import REPORT_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "results" / "calibration" / "brax" / "1_512" / "eval.json"  # a committed file of the old layout


def _committed_reports() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "results/**eval.json"], cwd=ROOT, capture_output=True, text=True)
    return [ROOT / p for p in listed.stdout.split()]


def test_an_old_file_and_its_new_layout_read_the_same(tmp_path):
    old = json.loads(OLD.read_text())
    assert "envs" not in old and set(old) - {"settings", "aggregate"}  # really the old layout: env ids at the top
    envs = {k: v for k, v in old.items() if k not in ("settings", "aggregate")}
    new = tmp_path / "eval.json"
    new.write_text(json.dumps({"settings": old["settings"], "envs": envs, "aggregate": old["aggregate"]}))
    from_old, from_new = read_report(OLD), read_report(tmp_path)  # a file, and a directory holding one
    assert from_old == from_new
    assert list(from_old) == list(SECTIONS) and list(from_old["envs"]) == list(envs)
    # The old file, read, renders the eval.md committed beside it, byte for byte.
    md = OLD.with_name("eval.md").read_text()
    figures = dict(re.findall(r"!\[(.*?)\]\((.*?)\)", md))
    assert render_markdown(from_old, figures) == md


def test_every_committed_report_loads():
    paths = _committed_reports()
    assert len(paths) >= 10
    for path in paths:
        report = read_report(path)
        assert list(report) == list(SECTIONS), path
        assert set(report["envs"]) == set(report["settings"]["timesteps"]), path  # env ids, and only they


def test_both_layouts_of_random_reports_agree():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(0, 6))
        names = [f"Env{int(i)}-v{int(rng.integers(0, 3))}" for i in rng.permutation(50)[:n]]
        envs = {e: {"ppo": {"mean": float(rng.normal())}} for e in names}
        settings, aggregate = {"seed": int(rng.integers(0, 9))}, {"score": "final_return"}
        new = {"settings": settings, "envs": envs, "aggregate": aggregate}
        old = {"settings": settings, **envs, "aggregate": aggregate}
        assert in_layout(old) == in_layout(new) == new
        assert list(in_layout(old)["envs"]) == names  # the file's order of envs is kept
        assert in_layout(in_layout(old)) == new  # reading twice changes nothing


def test_what_is_not_a_report_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="not an eval.json report"):
        in_layout({"generation": 3})
    with pytest.raises(UserError, match="no eval.json at"):
        read_report(tmp_path)
    (tmp_path / "eval.json").write_text("{")
    with pytest.raises(UserError, match="not valid JSON"):
        read_report(tmp_path)


def test_a_report_file_carries_its_schema_and_every_schema_reads(tmp_path):
    """What `evaluate` writes (`file_record`) is schema 2 and reads back as the report; schema 1 files (no schema
    key) read as before; a newer or damaged schema is a one-line error naming the file."""
    report = read_report(OLD)
    record = file_record(report)
    assert list(record) == ["schema", *SECTIONS] and record["schema"] == REPORT_SCHEMA == 2
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(record))
    assert read_report(path) == report
    for schema, message in ((3, "has schema 3, newer than this metadisco reads \\(2\\)"),
                            ("2", "damaged: its schema is '2'"), (0, "damaged: its schema is 0")):
        path.write_text(json.dumps({**record, "schema": schema}))
        with pytest.raises(UserError, match=f"{path}.*{message}"):
            read_report(path)


def test_a_schema_2_file_without_its_envs_is_damaged_not_read_as_the_oldest_layout(tmp_path):
    record = file_record(read_report(OLD))
    del record["envs"]
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(record))
    with pytest.raises(UserError, match='damaged: schema 2 holds its envs under "envs", which it lacks'):
        read_report(path)
