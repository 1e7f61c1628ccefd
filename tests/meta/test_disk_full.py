"""A disk that fills mid-run: the write that fails (here the checkpoint after generation 2, refused with
ENOSPC by the kernel's fsync) stops meta-training with one line saying what to do, the last checkpoint stays
intact with no temporary file left, and `--resume` then finishes the run."""

import errno
import os

import pytest
import yaml
from tiny_meta import read_metrics, tiny

from metadisco.cli import main
from metadisco.core import checkpoint as ckpt_lib


def fail_fsync_of(name: str, monkeypatch) -> None:
    """fsync of any file whose path contains `name` fails as a full disk does; every other fsync is real."""
    real = os.fsync

    def fsync(fd):
        if name in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.slow
def test_a_full_disk_stops_the_run_in_one_line_and_resume_finishes_it(tmp_path, monkeypatch, capsys):
    config, run = tmp_path / "tiny.yaml", tmp_path / "run"
    config.write_text(yaml.safe_dump(tiny(generations=3)))
    with monkeypatch.context() as patch:
        fail_fsync_of("gen_000002", patch)
        assert main(["meta-train", str(config), "--out", str(run)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("metadisco meta-train: error: cannot write")
    assert "No space left on device" in errors[0]
    assert "gen_000001.msgpack is intact" in errors[0] and "--resume" in errors[0]
    checkpoints = run / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir()) == ["gen_000000.msgpack", "gen_000001.msgpack"]
    assert ckpt_lib.latest(checkpoints).generation == 1  # loads: checksum and fields intact
    assert not (run / ".lock").exists()  # the lock went with the run

    assert main(["meta-train", str(config), "--out", str(run), "--resume"]) == 0
    assert [line["generation"] for line in read_metrics(run)] == [0, 1, 2]
    assert ckpt_lib.latest(checkpoints).generation == 3
