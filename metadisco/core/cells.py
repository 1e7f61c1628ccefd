"""A store of finished work: long commands as cells, each written atomically as it finishes, resumable.

A long command (an evaluation with a tuning grid, a sweep, a probe) is planned as cells, each a unit of work named
by a key (a short string of what it is: env, method, grid value, seed set). Each finished cell is written at once,
atomically, as `CELLS/<digest>.json` holding its key and its record (CELLS: `DIR/cells/` of an evaluation or a
sweep, `FILE.cells/` beside a probe's report), so a run killed at any point keeps every cell it finished. The
command's settings (everything that changes a cell's numbers: the command line, the methods' parameters, the
device count) are written first as `CELLS/plan.json`:

- a fresh run into a directory that already holds cells is refused (nothing finished is overwritten silently);
- `--resume` reads the cells that exist and runs only the missing ones, after checking that the settings equal
  the stored plan's; a difference is refused in one line naming the first setting that differs.

The command computes its output from the cells alone, so a resumed run and an uninterrupted one write the same
files. Records are JSON; arrays go in as base64 of their bytes (zlib-compressed above 4 KB) with dtype and shape
(`pack_array`), so that what comes back is bit-identical to what went in.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from metadisco.core.errors import SettingError, UserError, shorten
from metadisco.core.io import read_json, to_jsonable, write_json

PLAN = "plan.json"


# Arrays above this many bytes are zlib-compressed: learning curves of 16 seeds over 20,000 updates (DQN's) are
# 1.3 MB each as raw bytes and about a tenth of that compressed, mostly NaNs and zero counts.
COMPRESS_ABOVE = 4096


def pack_array(x) -> dict:
    """An array as {"dtype", "shape", "base64"} (its bytes), or "zlib" (its bytes zlib-compressed) for an array above
    `COMPRESS_ABOVE` bytes: exact either way, and a tenth of the size of a list of numbers or less."""
    a = np.asarray(x)
    data = a.tobytes()  # C order whatever the layout
    field = "base64"
    if len(data) > COMPRESS_ABOVE:
        data, field = zlib.compress(data, 6), "zlib"
    return {"dtype": a.dtype.str, "shape": list(a.shape), field: base64.b64encode(data).decode("ascii")}


def unpack_array(packed: dict) -> np.ndarray:
    """The inverse of `pack_array` (either form)."""
    compressed = "zlib" in packed
    data = base64.b64decode(packed["zlib" if compressed else "base64"])
    data = zlib.decompress(data) if compressed else data
    return np.frombuffer(data, dtype=np.dtype(packed["dtype"])).reshape(packed["shape"]).copy()


def tree_digest(tree: Any) -> str:
    """A short digest of a pytree's leaves and their paths (meta-parameters): a plan's record of them."""
    import jax

    digest = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        digest.update(jax.tree_util.keystr(path).encode())
        digest.update(np.asarray(leaf).tobytes())
    return digest.hexdigest()[:16]


def first_difference(old: Any, new: Any, path: str = "") -> str | None:
    """The first place where two JSON-like values differ, as 'path: old -> new', or None when they are equal."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            where = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                return f"{where}: {shorten(old.get(key, '(absent)'))} -> {shorten(new.get(key, '(absent)'))}"
            found = first_difference(old[key], new[key], where)
            if found:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if old == new else f"{path or 'settings'}: {shorten(old)} -> {shorten(new)}"


class CellStore:
    """The finished cells of one command's run directory (see the module docstring).

    store = CellStore(out / "cells", settings, resume=args.resume, command="evaluate")
    record = store.get(key)          # None when the cell is missing
    store.put(key, record)           # atomically, at once
    `write=False` (a multi-process run's other processes) never writes, and reads only with `resume` (then every
    process must see the directory).
    """

    def __init__(self, directory: str | Path, settings: dict, resume: bool, command: str, write: bool = True,
                 output: str | Path | None = None, upgrade=None):
        """`directory`: where the cells live; `output`: what the user named (--out), for messages (default: the
        directory's parent); `upgrade`: settings of an older version -> as this one writes them (the plan a run of
        an older metadisco stored is compared through it)."""
        self.directory = Path(directory)
        output = Path(output) if output is not None else self.directory.parent
        self.write = write
        self.settings = to_jsonable(settings)
        self._cells: dict[str, dict] = {}
        plan_file = self.directory / PLAN
        if not write and not resume:  # another process of a fresh multi-process run: process 0 keeps the cells
            return
        if plan_file.exists():
            if not resume:
                raise SettingError(f"{str(output)!r} already holds the cells of a {command} run "
                                   f"({str(self.directory)!r}); give resume to finish it (only missing cells "
                                   "run), or another out", ("resume", "out"))
            stored = read_json(plan_file)
            stored_settings = stored.get("settings") if isinstance(stored, dict) else None
            if upgrade is not None and stored_settings is not None:
                stored_settings = upgrade(stored_settings)
            difference = first_difference(stored_settings, self.settings)
            if difference:
                raise SettingError(f"resume: the command differs from the one that made {str(plan_file)!r} "
                                   f"({difference}); give the same settings, or another out", ("resume", "out"))
            self._load()
        elif write:
            write_json(plan_file, {"command": command, "settings": self.settings})

    def _load(self) -> None:
        for path in sorted(self.directory.glob("*.json")):
            if path.name == PLAN:
                continue
            cell = read_json(path)
            if not isinstance(cell, dict) or "key" not in cell or "record" not in cell \
                    or path.name != self.file_name(cell["key"]):
                raise UserError(f"damaged cell file {path}: not a cell this store wrote; move it away and "
                                "--resume again to recompute it")
            self._cells[cell["key"]] = cell["record"]

    @staticmethod
    def file_name(key: str) -> str:
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24] + ".json"

    def __contains__(self, key: str) -> bool:
        return key in self._cells

    def get(self, key: str) -> dict | None:
        return self._cells.get(key)

    def put(self, key: str, record: dict) -> None:
        record = json.loads(json.dumps(to_jsonable(record)))  # what a reader of the file gets back
        if self.write:
            write_json(self.directory / self.file_name(key), {"key": key, "record": record})
        self._cells[key] = record

    def keys(self) -> list[str]:
        return list(self._cells)
