"""Checkpoints of a meta-training run: everything needed to continue it bit for bit.

DIR/checkpoints/gen_NNNNNN.msgpack (NNNNNN = generations done) is flax msgpack (no pickle) of

    {"format": "metadisco-meta-checkpoint", "version": 1,
     "generation": generations done, "key": the run's base PRNG key (uint32[2]),
     "es_state": {"0": leaf, "1": leaf, ...}       # the evosax state's leaves in tree order
     "normalisers": {env: baseline return}, "metrics_lines": lines of metrics.jsonl written so far,
     "env_steps": env steps so far, "extra": small run facts (e.g. the initial mean's fitness),
     "config_sha256": digest of the resolved config, "sha256": digest of everything above}

Written atomically; the two newest are kept. Every generation's keys derive from (base key, generation), so
the ES state and the generation are enough to redo the rest exactly. A file that fails to parse or whose
checksum or structure does not match is a `UserError` (a damaged checkpoint is never skipped silently).
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

from metadisco.errors import UserError
from metadisco.io import atomic_write_bytes

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
    try:
        payload = serialization.msgpack_restore(path.read_bytes())
    except Exception as e:  # msgpack raises several types for truncated or foreign bytes
        raise UserError(f"{damaged} ({type(e).__name__}); delete it to resume from an older one") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise UserError(f"{damaged}: not a metadisco meta-training checkpoint")
    if payload.get("version") != VERSION:
        raise UserError(f"{damaged}: format version {payload.get('version')!r}, this metadisco reads {VERSION}")
    digest = payload.pop("sha256", None)
    try:
        ok = digest == _digest(payload)
    except Exception:
        ok = False
    if not ok:
        raise UserError(f"{damaged}: checksum mismatch; delete it to resume from an older one")
    leaves = payload["es_state"]
    return Checkpoint(
        generation=int(payload["generation"]), key=np.asarray(payload["key"]),
        es_leaves=[np.asarray(leaves[str(i)]) for i in range(len(leaves))],
        normalisers={k: float(v) for k, v in payload["normalisers"].items()},
        metrics_lines=int(payload["metrics_lines"]), env_steps=int(payload["env_steps"]),
        config_sha256=str(payload["config_sha256"]), extra=dict(payload.get("extra") or {}),
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
