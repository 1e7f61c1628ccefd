"""One writer per output directory (`metadisco.core.lock`): a second writer is refused in one line naming the
holder, a holder killed with SIGKILL leaves a lock the next writer takes over (and says so), readers (plot,
inspect) never wait, and a multi-host run's other processes take no lock."""

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from metadisco.cli import main
from metadisco.core import lock as rundir_lock
from metadisco.core.errors import UserError
from metadisco.objectives import BUILTIN_OBJECTIVES, save_objective
from metadisco.runs.rundir import RunDir

HOLD = ("import sys, time; from metadisco.core import lock; lock.hold(sys.argv[1]); "
        "print('held', flush=True); time.sleep(600)")


@pytest.fixture
def holder(tmp_path):
    """Another process holding the lock of tmp_path / 'run' (yields the process; killed after the test)."""
    run = tmp_path / "run"
    run.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait(timeout=60)
    proc.stdout.close()


def test_a_second_writer_exits_2_naming_the_holder(holder, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["distil", "dpo", "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"pid {holder.pid} on host {socket.gethostname()}, started " in err
    assert "being written by another metadisco process" in err
    assert not (run / "distilled.json").exists()


def test_a_held_run_directory_is_refused_before_its_own_checks(holder, tmp_path):
    """meta-train and pbt check their run directory (RunDir.check_before_run): the lock comes first."""
    run = tmp_path / "run"
    (run / "notes.txt").write_text("not empty")  # without the lock the refusal would be "not empty"
    with pytest.raises(UserError, match=f"pid {holder.pid} on host"):
        RunDir(run).check_before_run(resume=False)


def test_a_lock_whose_holder_was_killed_is_taken_over_and_said(holder, tmp_path, capsys):
    run = tmp_path / "run"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    assert json.loads((run / rundir_lock.LOCK).read_text())["pid"] == holder.pid  # the dead holder's record
    assert main(["distil", "dpo", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert f"took over the lock of {run}, left by pid {holder.pid} on host" in err and "which is gone" in err
    assert (run / "distilled.json").is_file()
    assert not (run / rundir_lock.LOCK).exists()  # released cleanly at the end of the command


@pytest.mark.slow  # 12 s on 2 cores
def test_readers_never_block(holder, tmp_path, capsys):
    run = tmp_path / "run"
    dpo = BUILTIN_OBJECTIVES["dpo"]
    save_objective(run / "objective.msgpack", dpo, dpo.zero_meta())
    assert main(["inspect", str(run / "objective.msgpack")]) == 0
    assert main(["plot", str(run / "objective.msgpack"), "--out", str(run / "figures")]) == 0
    assert (run / "figures" / "drift_slices_linear.png").is_file()
    assert holder.poll() is None  # still holding


def test_one_process_takes_a_directory_once_and_other_hosts_processes_none(holder, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    assert rundir_lock.hold(mine) is True and rundir_lock.hold(mine) is False
    record = json.loads((mine / rundir_lock.LOCK).read_text())
    assert record["pid"] == os.getpid() and record["host"] == socket.gethostname() and record["started"]
    rundir_lock.release(mine)
    assert not (mine / rundir_lock.LOCK).exists()
    RunDir(tmp_path / "run", writer=False).check_before_run(resume=False)  # process 1 of a multi-host run
