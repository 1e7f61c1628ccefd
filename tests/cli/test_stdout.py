"""Standard output carries only the command's own output: each command runs as a child process with stdout
piped, and its first line is the command's own (no third-party import noise such as mujoco's "Failed to import
warp"), as `metadisco envs | head` shows it."""

import subprocess
import sys

import pytest
from processes import TIMEOUT

from metadisco.cli import COMMANDS

METADISCO = [sys.executable, "-m", "metadisco"]


def first_line(*argv: str, timeout: float = TIMEOUT) -> str:
    """The first line the command writes on stdout; the pipe is then closed, as `| head -1` would."""
    proc = subprocess.Popen([*METADISCO, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait(timeout=timeout)
        proc.stderr.close()
    return line


def test_envs_starts_with_its_header_when_brax_is_imported():
    assert first_line("envs").split() == ["env", "id", "observation", "actions"]


@pytest.mark.parametrize("argv, start", [(("inspect", "ppo"), "objective ppo:"), (("inspect", "ppo", "--json"), "{")])
def test_inspect_starts_with_its_own_output(argv, start):
    assert first_line(*argv).startswith(start)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_starts_with_usage(command):
    assert first_line(command, "--help").startswith(f"usage: metadisco {command}")


def test_a_refused_brax_env_leaves_stdout_empty():
    """`train` with a misspelt brax id imports brax (to name the closest ids) and writes its error on stderr only."""
    proc = subprocess.run([*METADISCO, "train", "--env", "brax/antt", "--out", "unused"], capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "brax/ant" in proc.stderr


def test_a_reader_closing_the_pipe_ends_the_command_quietly():
    """A reader that leaves before the output (`| head` after its lines): no BrokenPipeError traceback, and the
    status a shell gives a tool that SIGPIPE stopped."""
    proc = subprocess.Popen([*METADISCO, "inspect", "ppo"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    proc.stdout.close()  # long before the child has started and printed
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err and "error" not in err
