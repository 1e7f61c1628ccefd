"""A process of a multi-process run whose peer dies: stop soon, and say so in one line.

When one process of a `--distributed` run dies (SIGKILL, a lost host), JAX's runtime notices in one of two ways:
a gloo collective raises "Connection closed by peer" in Python, or the coordination service misses the peer's
heartbeats (`metadisco.parallel.hosts.HEARTBEAT_TIMEOUT_S`) and aborts the process from a C++ thread with
SIGABRT and a C++ stack trace, which Python can neither catch nor follow with a word of its own.

So a `--distributed` command runs as a child of a small supervisor (`run_supervised`): the child is the command
itself; the supervisor passes the child's standard output through untouched and relays its standard error line by
line, holding back what follows the first line of the runtime's own failure report. When the child stops because
a peer was lost (the Python path exits with `PEER_LOST`; the C++ path aborts after those lines), the supervisor's
last line says so and gives the command that resumes the run, and its exit status is 2. Any other ending passes
through unchanged (held-back lines included).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys

CHILD = "METADISCO_SUPERVISED"  # set in the child's environment: the child runs the command itself
PEER_LOST = 86  # the child's exit status when a collective failed because a peer's connection closed
RESUMABLE = ("meta-train", "evaluate", "sweep", "probe", "pbt")

# The first line of the runtime's report of a lost peer: everything from it on is held back.
_RUNTIME_FAILURE = re.compile(r"heartbeat|coordination_service|Terminating process because the JAX distributed|"
                              r"Connection closed by peer|Connection reset by peer")
_LOST_PEER = re.compile(r"stopped sending heartbeats|heartbeat timeout|Terminating process because the JAX "
                        r"distributed service|Connection closed by peer|Connection reset by peer")


def is_child() -> bool:
    return os.environ.get(CHILD) == "1"


def peer_lost_in(error: BaseException) -> bool:
    """Whether an exception raised in the child says that a collective lost its peer."""
    return bool(_LOST_PEER.search(str(error)))


def resume_command(argv: list[str]) -> str:
    """The command line that resumes this run (as typed, plus --resume where the command has it)."""
    command = next((a for a in argv if not a.startswith("-")), "")
    words = ["metadisco", *argv]
    if command in RESUMABLE and "--resume" not in argv:
        words.append("--resume")
    return shlex.join(words)


def lost_peer_message(argv: list[str]) -> str:
    command = next((a for a in argv if not a.startswith("-")), "metadisco")
    how = (f"resume with `{resume_command(argv)}` (in as many processes as before, or in one without "
           "--distributed)") if command in RESUMABLE else f"start it again: `{shlex.join(['metadisco', *argv])}`"
    return (f"metadisco {command}: error: a peer process of this multi-process run was lost (it died or stopped "
            f"answering), so this process stopped too; what was written is intact: {how}")


def run_supervised(argv: list[str]) -> int:
    """Run `metadisco ARGV` as a child process and relay it (see the module docstring); the exit status."""
    env = {**os.environ, CHILD: "1"}
    child = subprocess.Popen([sys.executable, "-m", "metadisco", *argv], env=env, stderr=subprocess.PIPE,
                             text=True, errors="replace", bufsize=1)
    # Ctrl-C reaches the child from the terminal itself (one process group): the supervisor only waits for it.
    # A SIGTERM sent to the supervisor alone is passed on.
    forward = {signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
               signal.SIGTERM: signal.signal(signal.SIGTERM, lambda s, _f: child.send_signal(s))}
    held: list[str] = []
    lost = False
    try:
        for line in child.stderr:
            if held or _RUNTIME_FAILURE.search(line):
                held.append(line)
                lost = lost or bool(_LOST_PEER.search(line))
            else:
                sys.stderr.write(line)
                sys.stderr.flush()
        status = child.wait()
    finally:
        for sig, handler in forward.items():
            signal.signal(sig, handler)
    if status == PEER_LOST or (lost and status != 0):
        sys.stderr.write(lost_peer_message(argv) + "\n")
        return 2
    sys.stderr.writelines(held)
    return status if status >= 0 else 128 - status
