"""metrics.jsonl lines carry their schema version (`metadisco.runs.migrate.METRICS_SCHEMA`), and every version's
lines read as this version writes them: `RunDir.read_metrics` through `upgrade_metrics_line`."""

import json
from pathlib import Path

import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.runs.migrate import METRICS_SCHEMA, upgrade_metrics_line
from metadisco.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]


def _random_line(rng: np.random.Generator, generation: int) -> dict:
    line = {"generation": generation, "fitness_mean": float(rng.normal()), "fitness_max": float(rng.normal()),
            "returns": {f"env{i}": float(rng.normal()) for i in range(rng.integers(1, 4))}}
    if rng.random() < 0.5:
        line["baseline"] = {"env0": float(rng.normal())}
    if rng.random() < 0.3:
        line["fitness_of_initial_mean"] = None
    return line


def test_lines_are_written_with_their_schema_and_read_back_as_appended(tmp_path):
    rng = np.random.default_rng(0)
    run = RunDir(tmp_path)
    lines = [_random_line(rng, g) for g in range(40)]
    for line in lines:
        run.append_metrics(line)
    written = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert all(next(iter(w)) == "schema" and w["schema"] == METRICS_SCHEMA for w in written)
    assert run.read_metrics() == lines


def test_a_line_without_a_schema_is_version_1_and_its_ppo_is_the_baseline():
    old = {"generation": 3, "fitness_mean": 1.0, "ppo": {"CartPole-v1": 400.0}}
    assert upgrade_metrics_line(old, "x") == {"generation": 3, "fitness_mean": 1.0, "baseline": {"CartPole-v1": 400.0}}
    current = {"generation": 3, "baseline": {"a": 1.0}}
    assert upgrade_metrics_line({"schema": METRICS_SCHEMA, **current}, "x") == current
    assert upgrade_metrics_line(current, "x") == current  # a version-1 line that already said "baseline"


def test_a_run_resumed_across_versions_reads_both_kinds_of_line(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"generation": 0, "ppo": {"a": 2.0}}) + "\n")
    run = RunDir(tmp_path)
    run.append_metrics({"generation": 1, "baseline": {"a": 2.0}})
    assert run.read_metrics() == [{"generation": 0, "baseline": {"a": 2.0}}, {"generation": 1, "baseline": {"a": 2.0}}]


@pytest.mark.parametrize("schema, message", [(METRICS_SCHEMA + 1, "newer than this metadisco reads"),
                                             ("2", "not a positive integer"), (0, "not a positive integer")])
def test_a_line_of_an_unknown_schema_is_one_line_naming_it(tmp_path, schema, message):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"generation": 0}) + "\n"
                                            + json.dumps({"schema": schema, "generation": 1}) + "\n")
    run = RunDir(tmp_path)
    with pytest.raises(UserError, match=f"line 2 of .*metrics.jsonl.*{message}"):
        run.read_metrics()
    assert run.read_metrics(lenient=True) == [{"generation": 0}]  # a figure leaves the line out


def test_a_line_that_is_not_an_object_is_damaged(tmp_path):
    (tmp_path / "metrics.jsonl").write_text("[1, 2]\n")
    with pytest.raises(UserError, match="damaged: a metrics line is a JSON object, got list"):
        RunDir(tmp_path).read_metrics()


def test_every_committed_run_reads_in_the_current_form():
    runs = sorted(ROOT.glob("results/**/run/metrics.jsonl"))
    assert runs
    for path in runs:
        rows = RunDir(path.parent, writer=False).read_metrics()
        assert rows and all("schema" not in r and "ppo" not in r for r in rows), path
