"""`metadisco probe --out FILE [--resume]`: each block of seeds is a cell kept in FILE.cells/ as it finishes; a
resumed probe trains only the missing blocks and writes the report an uninterrupted one wrote."""

import json

import pytest
import yaml

from metadisco.cli import main
from tests.tiny_meta import tiny


@pytest.mark.heavy
@pytest.mark.slow  # 29 s on 2 cores
def test_a_resumed_probe_writes_the_uninterrupted_report(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(tiny()))
    out = tmp_path / "probe.json"
    argv = ["probe", str(config), "--repeats", "3", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    whole = json.loads(out.read_text())
    cells = sorted(p for p in (tmp_path / "probe.json.cells").glob("*.json") if p.name != "plan.json")
    assert len(cells) == 3  # one task x 3 blocks
    cells[1].unlink()  # as if the probe died before its second block was written
    out.unlink()
    capsys.readouterr()
    assert main(argv) == 2  # a fresh run into kept cells is refused
    assert "--resume" in capsys.readouterr().err
    assert main([*argv, "--resume", "--repeats", "4"]) == 2  # another command line is refused, naming it
    assert "repeats: 3 -> 4" in capsys.readouterr().err
    assert main(["probe", str(config), "--resume"]) == 2
    assert main([*argv, "--resume"]) == 0
    assert json.loads(out.read_text()) == whole
    assert len([p for p in (tmp_path / "probe.json.cells").glob("*.json") if p.name != "plan.json"]) == 3
