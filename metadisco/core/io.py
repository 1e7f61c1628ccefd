"""Files: atomic writes (temporary name, fsync, rename), small JSON / YAML helpers, and the I/O boundary.

Every `OSError` of a read or a write becomes a one-line `UserError` naming the path and the operation: a file
that cannot be *read* (permissions, a directory in its place) is "cannot read", never "damaged", so nobody is
told to delete a good file. Output paths are checked for writability before any work (`check_output_dir`).
"""

from __future__ import annotations

import errno
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from metadisco.core.errors import DiskFullError, UserError


def os_error(e: OSError, operation: str, path: str | os.PathLike) -> UserError:
    """A one-line `UserError` for an `OSError`: 'cannot <operation> <path>: <reason>'; a `DiskFullError` when
    the disk or a quota is full, which a long run turns into advice (meta-train: resume once there is space)."""
    reason = e.strerror or type(e).__name__
    full = e.errno in (errno.ENOSPC, errno.EDQUOT)
    return (DiskFullError if full else UserError)(f"cannot {operation} {str(path)!r}: {reason}")


def _file_mode() -> int:
    """The mode `open()` would give a new file: 0o666 less the process's umask (mkstemp's temporary files are
    0o600, which would make every result private to its writer)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` so that readers see either the old file or the whole new one; the file gets the
    mode a plain `open()` would give it."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise os_error(e, "write", path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _file_mode())
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise os_error(e, "write", path) from None
        raise


def check_output_dir(path: str | os.PathLike, flag: str = "--out") -> Path:
    """`path` as a directory that exists and that a file can be written in; checked before any work starts,
    so a long run never ends by failing to write. Creates the directory (and its parents) if needed."""
    out = Path(path)
    if out.is_symlink() and not out.exists():
        raise UserError(f"{flag} {str(path)!r} is a dangling symbolic link (to {os.readlink(out)!r}); "
                        "remove it or give another directory")
    if out.exists() and not out.is_dir():
        raise UserError(f"{flag} {str(path)!r} is a file; give a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise os_error(e, f"create the {flag} directory", path) from None
    _probe_write(out, flag)
    return out


def check_output_file(path: str | os.PathLike, flag: str = "--out") -> Path:
    """`path` as a file that can be (re)written: not a directory, in a directory that can be written in."""
    out = Path(path)
    if out.is_dir():
        raise UserError(f"{flag} {str(path)!r} is a directory; give a file name")
    if out.is_symlink() and not out.exists():
        raise UserError(f"{flag} {str(path)!r} is a dangling symbolic link (to {os.readlink(out)!r})")
    check_output_dir(out.parent, f"the directory of {flag}")
    return out


def _probe_write(directory: Path, flag: str) -> None:
    # Permission bits are not the whole story (read-only mounts, ACLs, quotas; root ignores modes): try it.
    try:
        fd, tmp = tempfile.mkstemp(prefix=".metadisco-write-test.", dir=directory)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise os_error(e, f"write in {flag}", directory) from None


def read_bytes(path: str | os.PathLike, what: str = "file") -> bytes:
    """A file's bytes; missing is 'no such', unreadable is 'cannot read' (never 'damaged')."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"no such {what}: {str(path)!r}")
    if path.is_dir():
        raise UserError(f"cannot read {what} {str(path)!r}: it is a directory")
    try:
        return path.read_bytes()
    except OSError as e:
        raise os_error(e, f"read {what}", path) from None


def read_bounded_bytes(path: str | os.PathLike, what: str, max_bytes: int, expected: str) -> bytes:
    """The bytes of `what` at `path`, refused in one line when it is missing or larger than `max_bytes` (before
    reading it: a huge file is never loaded); `expected` says what size the file should have."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"no {what} {str(path)!r}")
    try:
        size = path.stat().st_size
    except OSError as e:
        raise os_error(e, f"read {what}", path) from None
    if size > max_bytes:
        raise UserError(f"{what} {str(path)!r} is {size:,} bytes; {expected} (at most {max_bytes:,})")
    return read_bytes(path, what)


def read_text(path: str | os.PathLike, what: str = "file") -> str:
    """A UTF-8 text file's contents; undecodable bytes are 'damaged'."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"damaged {what} {str(path)!r}: not UTF-8 text (byte {e.start})") from None


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def to_jsonable(value: Any) -> Any:
    """Arrays and numpy scalars to lists and floats; NaN and inf to None (JSON has neither)."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "shape") and hasattr(value, "tolist"):
        return to_jsonable(np.asarray(value).tolist())
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(to_jsonable(obj), indent=2) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    text = read_text(path, "JSON file")
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise UserError(f"damaged JSON file {path}: {str(e).splitlines()[0] if str(e) else 'too deep'}") from None


def read_yaml(path: str | os.PathLike) -> Any:
    """A YAML file's contents (see `metadisco.core.safe_yaml`); a missing, unreadable or unparsable file, or one whose
    aliases expand too far, is a one-line `UserError`."""
    from metadisco.core.safe_yaml import MAX_BYTES, load_yaml

    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # missing or unreadable: read_bytes names which
    if size > MAX_BYTES:  # not read into memory at all
        raise UserError(f"YAML file {str(path)!r} is {size:,} bytes; at most {MAX_BYTES:,} are read as YAML")
    return load_yaml(read_text(path, "YAML file"), f"YAML file {str(path)!r}")


def restore_msgpack(data: bytes, file_format: str, unreadable, foreign: str) -> dict:
    """The msgpack mapping in `data` whose "format" is `file_format`; else a `UserError`: `unreadable(exception)`
    for bytes msgpack cannot read, `foreign` for another format."""
    from flax import serialization

    try:
        payload = serialization.msgpack_restore(data)
    except Exception as e:  # msgpack raises several types for truncated or foreign bytes
        raise UserError(unreadable(e)) from None
    if not isinstance(payload, dict) or payload.get("format") != file_format:
        raise UserError(foreign)
    return payload
