"""One writer per output directory: an exclusive lock held while a command writes into it.

Two commands writing into one `--out` (a second `meta-train --resume` started by mistake, an `evaluate` into a
directory a `distil` is filling) would interleave checkpoints and metrics and leave a run that matches neither.
So every command that writes into a directory takes `DIR/.lock` first (`hold`): an `fcntl.flock` exclusive lock
on that file, which holds JSON naming the holder (pid, host, start time). A second writer gets the lock refused
and exits with one line naming the holder. Readers (`plot`, `inspect`) never take it, so they never block.

The kernel releases a flock when its process dies, however it dies (SIGKILL included), so a lock whose holder is
gone is simply free: the next writer takes it and, finding the dead holder's record still in the file, says it
took it over. A clean release deletes the file while still holding it; a writer that locked a file which was
deleted meanwhile lets it go and opens the new one, so two writers never hold two files of one name. On a
network file system the lock is only as good as its lock support (Linux's NFS client maps flock to POSIX
locks). A multi-host run takes the lock once, on its writer process (process 0,
`metadisco.parallel.hosts.is_writer`).

A process holds each directory once (`hold` again is a no-op returning False); the `metadisco` command releases
every lock as it ends (`release_all`), a library call releases the one it took (`release`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from metadisco.core.errors import UserError

LOCK = ".lock"
_held: dict[Path, int] = {}  # resolved directory -> open file descriptor of its lock file


def _stderr(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _describe(record: str) -> str:
    """'pid P on host H, started T' from a lock file's JSON (or what can be said of a file that is not)."""
    try:
        data = json.loads(record)
        return f"pid {data['pid']} on host {data['host']}, started {data['started']}"
    except (ValueError, KeyError, TypeError):
        return "a holder that left no record"


def _read(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 4096).decode("utf-8", "replace").strip()


def _open_locked(path: Path) -> tuple[int, bool]:
    """(fd of `path`, locked) with an exclusive flock tried on it. The lock is on the file `path` names now: a
    file unlinked by a releasing holder between our open and our flock is let go, and `path` opened again."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return fd, False
        except BaseException:
            os.close(fd)
            raise
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd, True
        except FileNotFoundError:
            pass
        os.close(fd)


def hold(directory: str | os.PathLike, say=_stderr) -> bool:
    """Take `directory`'s writer lock for this process (the directory must exist); True if taken now, False if
    this process held it already. Another live writer is a one-line `UserError` naming it; a lock left by a
    process that is gone is taken over, and `say` says so."""
    key = Path(directory).resolve()
    if key in _held:
        return False
    fd, locked = _open_locked(key / LOCK)
    if not locked:
        record = _read(fd)
        os.close(fd)
        raise UserError(f"{directory} is being written by another metadisco process ({_describe(record)}); wait "
                        f"for it to end, or give another directory")
    left = _read(fd)
    if left:
        say(f"took over the lock of {directory}, left by {_describe(left)}, which is gone")
    record = {"pid": os.getpid(), "host": socket.gethostname(),
              "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime())}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
    os.fsync(fd)
    _held[key] = fd
    return True


def release(directory: str | os.PathLike) -> None:
    """Give up `directory`'s lock if this process holds it: the lock file is removed while still locked (so
    a clean end leaves nothing behind; `_open_locked` lets go of a removed file), then the lock released."""
    key = Path(directory).resolve()
    fd = _held.pop(key, None)
    if fd is None:
        return
    try:
        (key / LOCK).unlink(missing_ok=True)
    finally:
        os.close(fd)  # closing the last descriptor releases the flock


def release_all() -> None:
    """Release every lock this process holds (the `metadisco` command, as it ends)."""
    for key in list(_held):
        release(key)


@contextlib.contextmanager
def writing(directory: str | os.PathLike, say=_stderr):
    """Hold `directory`'s lock (creating the directory) for the body; released after it if taken here, so a
    library call leaves no lock behind while a command's lock (taken earlier) lasts to its end."""
    Path(directory).mkdir(parents=True, exist_ok=True)
    taken = hold(directory, say)
    try:
        yield
    finally:
        if taken:
            release(directory)


def is_lock_file(path: Path) -> bool:
    """A directory's lock file, which does not make a run directory non-empty."""
    return path.name == LOCK
