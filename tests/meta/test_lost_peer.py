"""A process of a multi-process run whose peer dies: it stops within 30 s, its last line says a peer was lost and
gives the --resume command (exit status 2, no C++ stack trace), and the run resumes in one process and in two.
Real processes on 127.0.0.1, a real SIGKILL (`metadisco.cli.supervise`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import yaml
from processes import TIMEOUT, line_count, start_metadisco
from tiny_meta import read_metrics, tiny

GENERATIONS = 40


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two(config_path, run, *extra):
    port = _free_port()
    procs = []
    for i in range(2):
        env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
               "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": str(i)}
        procs.append(start_metadisco(["meta-train", str(config_path), "--out", str(run), "--distributed",
                                      "--no-progress", *extra], env=env, start_new_session=True))
    return procs


def test_the_survivor_of_a_dead_peer_stops_says_so_and_the_run_resumes(tmp_path):
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(tiny(generations=GENERATIONS, eval_every=100)))
    run = tmp_path / "run"
    survivor, victim = _two(config_path, run)
    deadline = time.monotonic() + TIMEOUT
    while line_count(run / "metrics.jsonl") < 3 and survivor.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert survivor.poll() is None, survivor.communicate()[1][-2000:]
    os.killpg(victim.pid, signal.SIGKILL)  # the peer and its child (the command under its supervisor)
    killed = time.monotonic()
    victim.communicate(timeout=TIMEOUT)
    _, err = survivor.communicate(timeout=TIMEOUT)
    stopped_after = time.monotonic() - killed
    assert stopped_after < 30, stopped_after
    assert survivor.returncode == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert "a peer process of this multi-process run was lost" in last and "--resume" in last, err[-2000:]
    assert "Check failure stack trace" not in err and "@     0x" not in err
    done = len(read_metrics(run))
    assert done < GENERATIONS

    one = subprocess.run([sys.executable, "-m", "metadisco", "meta-train", str(config_path), "--out", str(run),
                          "--no-progress", "--resume", "--set", f"generations={done + 2}"],
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert one.returncode == 0, one.stderr[-2000:]
    assert len(read_metrics(run)) == done + 2
    procs = _two(config_path, run, "--resume", "--set", f"generations={done + 4}")
    for p in procs:
        _, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, err[-2000:]
    assert [line["generation"] for line in read_metrics(run)] == list(range(done + 4))
