"""Checkpoints of a meta-training run: everything needed to continue it bit for bit.

DIR/checkpoints/gen_NNNNNN.msgpack (NNNNNN = generations done) is flax msgpack (no pickle) of

    {"format": "metadisco-meta-checkpoint", "version": 1,
     "generation": generations done, "key": the run's base PRNG key (uint32[2]),
     "es_state": {"0": leaf, "1": leaf, ...}       # the evosax state's leaves in tree order
     "normalisers": {env: baseline return}, "metrics_lines": lines of metrics.jsonl written so far,
     "env_steps": env steps so far, "extra": small run facts (e.g. the initial mean's fitness),
     "config_sha256": digest of the resolved config, "sha256": digest of everything above}

Written atomically; the two newest are kept. Every generation's keys derive from (base key, generation), so
the ES state and the generation are enough to redo the rest exactly. A file that fails to parse, has no
checksum or a wrong one, or lacks a field or has one of the wrong type or shape is a `UserError` saying it is
damaged (a damaged checkpoint is never skipped silently). A file that cannot be *read* (permissions, a
directory in its place) says so instead, and never advises deleting it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from metadisco.core.coerce import is_number
from metadisco.core.errors import UserError, shorten
from metadisco.core.io import atomic_write_bytes, read_bytes, restore_msgpack

FORMAT = "metadisco-meta-checkpoint"
VERSION = 1
KEEP = 2
_NAME = re.compile(r"^gen_(\d{6,})\.msgpack$")


@dataclass
class Checkpoint:
    generation: int
    key: np.ndarray
    es_leaves: list[np.ndarray]
    normalisers: dict[str, float]
    metrics_lines: int
    env_steps: int
    config_sha256: str
    extra: dict[str, Any] = field(default_factory=dict)


_EMPTY = Checkpoint(0, np.zeros(2, np.uint32), [], {}, 0, 0, "")


def config_digest(config_yaml: str) -> str:
    return hashlib.sha256(config_yaml.encode()).hexdigest()


def _body(ckpt: Checkpoint) -> dict:
    return {
        "format": FORMAT, "version": VERSION, "generation": int(ckpt.generation), "key": np.asarray(ckpt.key),
        "es_state": {str(i): np.asarray(leaf) for i, leaf in enumerate(ckpt.es_leaves)},
        "normalisers": {k: float(v) for k, v in ckpt.normalisers.items()},
        "metrics_lines": int(ckpt.metrics_lines), "env_steps": int(ckpt.env_steps),
        "config_sha256": ckpt.config_sha256, "extra": ckpt.extra,
    }


def _digest(body: dict) -> str:
    return hashlib.sha256(serialization.msgpack_serialize(body)).hexdigest()


def save(directory: Path, ckpt: Checkpoint) -> Path:
    """Write the checkpoint atomically and drop all but the newest `KEEP`."""
    body = _body(ckpt)
    path = directory / f"gen_{ckpt.generation:06d}.msgpack"
    atomic_write_bytes(path, serialization.msgpack_serialize({**body, "sha256": _digest(body)}))
    for old in list_checkpoints(directory)[:-KEEP]:
        old.unlink(missing_ok=True)
    return path


def list_checkpoints(directory: Path) -> list[Path]:
    """Checkpoint files, oldest first (temporary files of interrupted writes are not listed)."""
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def load(path: Path) -> Checkpoint:
    """Read and verify one checkpoint; any damage is a one-line `UserError`."""
    damaged = f"damaged checkpoint {path}"
    data = read_bytes(path, "checkpoint")  # unreadable: "cannot read", not "damaged"
    payload = restore_msgpack(data, FORMAT, lambda e: f"{damaged} ({type(e).__name__}); delete it to resume from an "
                              "older one", f"{damaged}: not a metadisco meta-training checkpoint")
    if payload.get("version") != VERSION:
        raise UserError(f"{damaged}: format version {payload.get('version')!r}, this metadisco reads {VERSION}")
    digest = payload.pop("sha256", None)
    try:
        ok = digest == _digest(payload)
    except Exception:
        ok = False
    if not ok:
        raise UserError(f"{damaged}: checksum mismatch; delete it to resume from an older one")
    return _from_payload(payload, damaged)


def _from_payload(payload: dict, damaged: str) -> Checkpoint:
    """Every field present, of its type and range (a file can have a valid checksum over a wrong structure:
    written by another version, or by hand)."""
    def field_error(name: str, what: str) -> UserError:
        return UserError(f"{damaged}: field {name!r} {what}; delete it to resume from an older one")

    missing = [k for k in _body(_EMPTY) if k not in payload]
    if missing:
        raise field_error(missing[0], "is missing")

    def count(name: str) -> int:
        value = payload[name]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 2**62:
            raise field_error(name, f"is {shorten(value)}, not a count")
        return value

    key = np.asarray(payload["key"]) if isinstance(payload["key"], np.ndarray) else None
    if key is None or key.shape != (2,) or key.dtype != np.uint32:
        raise field_error("key", "is not a uint32[2] PRNG key")
    leaves = payload["es_state"]
    if not isinstance(leaves, dict) or set(leaves) != {str(i) for i in range(len(leaves))}:
        raise field_error("es_state", "is not a numbered list of arrays")
    es_leaves = [leaves[str(i)] for i in range(len(leaves))]
    for i, leaf in enumerate(es_leaves):
        if not isinstance(leaf, (np.ndarray, np.generic)) or leaf.dtype.kind not in "fiub":
            raise field_error(f"es_state/{i}", "is not an array of numbers")
    normalisers = payload["normalisers"]
    if not isinstance(normalisers, dict) or not all(
            isinstance(k, str) and is_number(v) and np.isfinite(v) for k, v in normalisers.items()):
        raise field_error("normalisers", "is not a mapping of env ids to finite numbers")
    extra = payload["extra"]
    if not isinstance(extra, dict) or not all(isinstance(k, str) for k in extra) or any(
            is_number(v) and not np.isfinite(v) for v in extra.values()):
        raise field_error("extra", "is not a mapping of names to small facts with finite numbers")
    if not isinstance(payload["config_sha256"], str):
        raise field_error("config_sha256", "is not a digest")
    return Checkpoint(
        generation=count("generation"), key=key, es_leaves=[np.asarray(leaf) for leaf in es_leaves],
        normalisers={k: float(v) for k, v in normalisers.items()}, metrics_lines=count("metrics_lines"),
        env_steps=count("env_steps"), config_sha256=payload["config_sha256"],
        extra=dict(extra),
    )


def latest(directory: Path) -> Checkpoint | None:
    paths = list_checkpoints(directory)
    return load(paths[-1]) if paths else None


def restore_state(template, ckpt: Checkpoint, path_hint: str = "checkpoint"):
    """Put the checkpoint's leaves into the structure of `template` (a freshly initialised ES state)."""
    leaves, treedef = jax.tree.flatten(template)
    if len(leaves) != len(ckpt.es_leaves):
        raise UserError(f"{path_hint} holds an ES state of {len(ckpt.es_leaves)} arrays, this config's strategy "
                        f"has {len(leaves)}; was the strategy changed?")
    for i, (want, got) in enumerate(zip(leaves, ckpt.es_leaves, strict=True)):
        if np.shape(want) != got.shape or np.asarray(want).dtype != got.dtype:
            raise UserError(f"{path_hint}: ES state array {i} is {got.dtype}{list(got.shape)}, expected "
                            f"{np.asarray(want).dtype}{list(np.shape(want))}; was the strategy changed?")
    return jax.tree.unflatten(treedef, ckpt.es_leaves)
