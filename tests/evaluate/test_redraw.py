"""An evaluation's figures come back from its eval.json alone (`metadisco plot EVAL_DIR`), which is why results/
keeps only the figures a README shows: every committed eval.json, of both layouts, redraws."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from metadisco.evaluate.layout import read_report
from metadisco.figures.eval_curves import redraw

ROOT = Path(__file__).resolve().parents[2]
REPORTS = sorted(ROOT.glob("results/**/eval.json"))
OLD = ROOT / "results/discovery/campaign7/eval/eval.json"  # envs at the top level (older files)
NEW = ROOT / "results/value_loss_cartpole/eval_1x_tuned/eval.json"  # envs under "envs"


def test_both_layouts_are_committed_and_read():
    assert OLD in REPORTS and NEW in REPORTS
    old, new = (json.loads(p.read_text()) for p in (OLD, NEW))
    assert "envs" not in old and "envs" in new
    assert set(read_report(OLD)["envs"]) == {"Pendulum-v1", "Reacher-misc", "Breakout-MinAtar", "Seaquest-MinAtar",
                                             "Catch-bsuite"}
    assert set(read_report(NEW)["envs"]) == {"CartPole-v1"}


def _redraws(report: Path, tmp_path: Path) -> None:
    data = read_report(report)
    paths = redraw(data, tmp_path)
    assert [p.name for p in paths][-1] == "aggregate.png"
    assert len(paths) == len(data["envs"]) + 1
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("report", [NEW], ids=["new_layout"])  # the old layout: the command's test below
def test_an_evaluation_redraws(report, tmp_path):
    _redraws(report, tmp_path)


@pytest.mark.slow  # 75 s on 2 cores: 54 reports
@pytest.mark.parametrize("report", REPORTS, ids=lambda p: str(p.parent.relative_to(ROOT)))
def test_every_committed_evaluation_redraws(report, tmp_path):
    _redraws(report, tmp_path)


def test_the_command_redraws_and_refuses_what_is_not_a_report(tmp_path):
    run = [sys.executable, "-m", "metadisco", "plot"]
    done = subprocess.run([*run, str(OLD.parent), "--out", str(tmp_path / "fig")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "fig").glob("*.png"))) == 6
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "eval.json").write_text('{"envs": {}}')
    done = subprocess.run([*run, str(tmp_path / "bad"), "--out", str(tmp_path / "fig2")], capture_output=True,
                          text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "is not an eval.json report" in done.stderr
