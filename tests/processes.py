"""What the tests that run the command line in child processes share: how to start one, their time limit, a
file's line count (how far a run has got), and a SIGKILL at a random point of a run."""

import ctypes
import os
import random
import signal
import subprocess
import sys
import time

from metadisco.parallel.devices import with_device_count

TIMEOUT = 600  # seconds a child process may take before the test fails
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """`preexec_fn` of a child process: the kernel kills it when the test process dies, so that a crashed test
    worker leaves no command running (in its own session, out of reach of the worker's process group) to hold the
    machine's cores for the rest of the suite."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def start_metadisco(argv, **popen) -> subprocess.Popen:
    """`python -m metadisco ARGV` in a child process that dies with the test process, its output captured as text;
    `popen`: more `subprocess.Popen` arguments (env, start_new_session)."""
    return subprocess.Popen([sys.executable, "-m", "metadisco", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=die_with_parent, **popen)


def xla_flags(devices: int) -> str:
    """XLA_FLAGS for a child process with `devices` CPU devices and every other flag of the test process (such as
    a compile level the contributor set, which the README describes)."""
    return with_device_count(os.environ.get("XLA_FLAGS", ""), devices)


def line_count(path) -> int:
    """Lines in `path` so far (0 before the file exists)."""
    try:
        return len(path.read_text().splitlines())
    except FileNotFoundError:
        return 0


def kill_at_random_point(proc, metrics_path, max_lines: int, max_delay: float) -> None:
    """SIGKILL `proc` after a random number of lines (1..max_lines) of `metrics_path`, then a random delay inside
    the next unit of work; assert it was killed, not finished."""
    rng = random.Random(os.getpid())
    kill_after = rng.randint(1, max_lines)
    deadline = time.monotonic() + TIMEOUT
    while line_count(metrics_path) < kill_after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(rng.uniform(0.0, max_delay))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
