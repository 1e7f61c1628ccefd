"""Meta-training across processes: SIGKILL at a random point then `--resume` ends byte-identical to an
uninterrupted run; two processes on 127.0.0.1 (gloo collectives) agree with one process; and a process of a
multi-process run whose peer dies stops within 30 s, its last line says a peer was lost and gives the --resume
command (exit status 2, no C++ stack trace), and the run resumes in one process and in two. Real processes, a real
SIGKILL (`metadisco.cli.supervise`).

The subprocesses inherit conftest's environment (4 CPU devices), so they run the same programs as the in-process
runs. What is not about a process (the uninterrupted reference runs, a resume in one process) runs in this one,
where the tiny config's program is compiled once for the whole file; each child process compiles it again.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time

import pytest
import yaml
from processes import TIMEOUT, kill_at_random_point, line_count, start_metadisco, xla_flags
from tiny_meta import fitness_columns, read_metrics, tiny

from metadisco.cli import main
from metadisco.meta.loop import meta_train
from metadisco.runs import baseline_cache

GENERATIONS = 40  # of the run whose peer is killed: far more than it gets through before the kill


@pytest.fixture(autouse=True)
def _no_baseline_cache_after():
    """The command line run in this process turns the baseline cache on; switch it back off after."""
    yield
    baseline_cache.configure(False)


def cli(config_path, out, *extra, env=None, **popen):
    return start_metadisco(["meta-train", str(config_path), "--out", str(out), *extra], env=env, **popen)


def finish(proc) -> str:
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err[-2000:]
    return err


@pytest.mark.heavy
@pytest.mark.slow  # 62 s on 2 cores
def test_sigkill_then_resume_is_byte_identical(tmp_path):
    config = tiny(generations=24, eval_every=4)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    reference = tmp_path / "reference"
    meta_train(config, reference, progress=False)

    run = tmp_path / "run"
    proc = cli(config_path, run)
    kill_at_random_point(proc, run / "metrics.jsonl", 8, 0.05)  # 1-8 generations logged, then inside the next
    assert line_count(run / "metrics.jsonl") < 24

    # the resume reads what the killed process left on disk; it is the same command in this process
    assert main(["meta-train", str(config_path), "--out", str(run), "--resume"]) == 0
    assert (run / "objective.msgpack").read_bytes() == (reference / "objective.msgpack").read_bytes()
    assert fitness_columns(read_metrics(run)) == fitness_columns(read_metrics(reference))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two(config_path, run, *extra):
    """Processes 0 and 1 of a two-process run (2 CPU devices each), each in its own session (so that a SIGKILL of
    its process group reaches the command under its supervisor)."""
    port = _free_port()
    procs = []
    for i in range(2):
        env = {**os.environ, "XLA_FLAGS": xla_flags(2),
               "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": str(i)}
        procs.append(cli(config_path, run, "--distributed", "--no-progress", *extra, env=env,
                         start_new_session=True))
    return procs


@pytest.mark.heavy
@pytest.mark.slow  # 65 s on 2 cores
def test_two_processes_agree_with_one_and_a_dead_peer_stops_the_survivor_and_the_run_resumes(tmp_path, capsys):
    """One run through every multi-process path: two processes, one of them SIGKILLed after 3 generations; the
    survivor stops and says so; the run resumes in one process, then in two. Every generation (the ES mean scored
    on fresh seeds in each: eval_every 1) and the final objective are bit for bit those of one uninterrupted
    process on the same 4-device mesh, whichever process count made them."""
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(tiny(generations=GENERATIONS, eval_every=1)))
    run = tmp_path / "run"
    survivor, victim = _two(config_path, run)
    deadline = time.monotonic() + TIMEOUT
    while line_count(run / "metrics.jsonl") < 3 and survivor.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert survivor.poll() is None, survivor.communicate()[1][-2000:]
    os.killpg(victim.pid, signal.SIGKILL)  # the peer and its child (the command under its supervisor)
    killed = time.monotonic()
    _, victim_err = victim.communicate(timeout=TIMEOUT)
    _, err = survivor.communicate(timeout=TIMEOUT)
    stopped_after = time.monotonic() - killed
    assert stopped_after < 30, stopped_after
    assert survivor.returncode == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert "a peer process of this multi-process run was lost" in last and "--resume" in last, err[-2000:]
    assert "Check failure stack trace" not in err and "@     0x" not in err
    assert "2 process(es)" in err and "over 4 device(s)" in err  # process 0 reports ...
    assert "meta-training" not in victim_err  # ... and only process 0 (and writes files)
    done = len(read_metrics(run))
    assert 3 <= done < GENERATIONS

    # in one process (this one: the resume is not about the process, and its program is compiled here already)
    assert main(["meta-train", str(config_path), "--out", str(run), "--no-progress", "--resume", "--set",
                 f"generations={done + 2}"]) == 0
    assert "1 process(es)" in capsys.readouterr().err
    assert len(read_metrics(run)) == done + 2
    procs = _two(config_path, run, "--resume", "--set", f"generations={done + 4}")
    errs = [finish(p) for p in procs]
    assert "2 process(es)" in errs[0] and "meta-training" not in errs[1]
    assert [line["generation"] for line in read_metrics(run)] == list(range(done + 4))

    reference = tmp_path / "one"
    meta_train(tiny(generations=done + 4, eval_every=1), reference, progress=False)  # one process, 4 devices
    assert fitness_columns(read_metrics(run)) == fitness_columns(read_metrics(reference))
    assert (run / "objective.msgpack").read_bytes() == (reference / "objective.msgpack").read_bytes()
    assert json.loads((run / "summary.json").read_text())["generations"] == done + 4
