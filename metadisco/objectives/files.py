"""Objective files: an objective's spec and meta-parameters in one self-describing, versioned file.

The file is msgpack (flax.serialization, no pickle, so loading a file from someone else cannot run code) of

    {"format": "metadisco-objective", "version": 1,
     "spec": objective.to_spec(),             # {slot: {"kind": name, **options}}, plain data
     "meta": {slot: nested dicts of arrays},  # the meta-parameter pytree, float32 arrays
     "sha256": hex digest of msgpack({"spec": spec, "meta": meta})}   # catches damage inside array bytes

It is written atomically (temporary name, fsync, rename). Loading checks the size, the format, the version,
the checksum (required: a file without one is refused), that every kind is known with options of the right
types and sizes, and that the meta-parameters have exactly the structure and shapes the spec implies and are
finite numbers; anything else is a one-line `UserError`. A file that cannot be read is "cannot read", never
"damaged".
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from metadisco.core.errors import UserError
from metadisco.core.io import atomic_write_bytes, read_bounded_bytes, restore_msgpack
from metadisco.objectives.objective import Objective

FORMAT = "metadisco-objective"
VERSION = 1
# The largest objective has MAX_META_PARAMETERS float32s per piece (metadisco.core.limits), four pieces (with a trace).
MAX_FILE_BYTES = 4 * 4 * 2**24 + 2**20


def _plain(value: Any) -> Any:
    """Spec values as msgpack-able plain data: tuples to lists, numpy scalars to Python numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _meta_to_numpy(meta: Any, where: str = "meta") -> Any:
    """The meta-parameter pytree as nested dicts of numpy arrays (the only containers a file holds)."""
    if isinstance(meta, dict):
        return {str(k): _meta_to_numpy(v, f"{where}/{k}") for k, v in meta.items()}
    if isinstance(meta, (jax.Array, np.ndarray, np.generic, float, int)):
        return np.asarray(meta)
    raise TypeError(f"{where}: objective meta-parameters must be nested dicts of arrays, got {type(meta).__name__}")


def _checksum(spec: dict, meta: dict) -> str:
    return hashlib.sha256(serialization.msgpack_serialize({"spec": spec, "meta": meta})).hexdigest()


def _paths_and_leaves(tree: Any, prefix: str = "") -> dict[str, Any]:
    """{'drift/w1': leaf, ...} of nested dicts; an empty dict is kept as a leaf so that its absence shows."""
    if isinstance(tree, dict) and tree:
        out = {}
        for k, v in tree.items():
            out.update(_paths_and_leaves(v, f"{prefix}/{k}" if prefix else str(k)))
        return out
    return {prefix: tree}


def check_meta(objective: Objective, meta: Any, source: str = "meta-parameters") -> dict:
    """`meta` cast to the objective's own structure, shapes and dtypes, or a `UserError` naming the mismatch."""
    expected = _paths_and_leaves(objective.zero_meta())
    given = _paths_and_leaves(meta if isinstance(meta, dict) else {"?": meta})
    missing = sorted(set(expected) - set(given))
    extra = sorted(set(given) - set(expected))
    if missing or extra:
        what = f"lacks {missing[0]!r}" if missing else f"has an unexpected {extra[0]!r}"
        raise UserError(f"{source} do not match the objective's spec: it {what}")
    for path, want in expected.items():
        got = given[path]
        if isinstance(want, dict):  # an empty slot (handcrafted piece)
            if not isinstance(got, dict) or got:
                raise UserError(f"{source} do not match the objective's spec: {path!r} should be empty")
            continue
        if isinstance(got, dict) or np.asarray(got).dtype.kind not in "fiu":
            raise UserError(f"{source} do not match the objective's spec: {path!r} is not an array of numbers")
        shape = np.shape(got)
        if shape != want.shape:
            raise UserError(f"{source} do not match the objective's spec: {path!r} has shape {shape}, "
                            f"expected {tuple(want.shape)}")
        values = np.asarray(got, np.float64)
        if not np.isfinite(values).all():
            bad = values[~np.isfinite(values)][0]
            raise UserError(f"{source}: {path!r} holds {int(np.sum(~np.isfinite(values))):,} non-finite "
                            f"value(s) (first: {bad}); meta-parameters must be finite numbers")
    return jax.tree.map(lambda want, got: jnp.asarray(got, want.dtype), objective.zero_meta(), meta)


def objective_bytes(objective: Objective, meta_params: Any) -> bytes:
    """The file's bytes for `objective` with `meta_params` (checked against the objective's spec first)."""
    spec = _plain(objective.to_spec())
    Objective.from_spec(spec)  # a spec this version could not load back is a bug here, not later
    meta = _meta_to_numpy(jax.device_get(check_meta(objective, meta_params)))
    payload = {"format": FORMAT, "version": VERSION, "spec": spec, "meta": meta, "sha256": _checksum(spec, meta)}
    return serialization.msgpack_serialize(payload)


def save_objective(path: str | os.PathLike, objective: Objective, meta_params: Any) -> Path:
    """Write `objective` and `meta_params` to `path` atomically; returns the path."""
    path = Path(path)
    atomic_write_bytes(path, objective_bytes(objective, meta_params))
    return path


def objective_from_bytes(data: bytes, source: str = "objective file") -> tuple[Objective, dict]:
    """Parse a file's bytes -> (objective, meta_params); any problem is a one-line `UserError`."""
    payload = restore_msgpack(
        data, FORMAT, lambda e: f"{source} is damaged or not a metadisco objective file ({type(e).__name__}: {e})",
        f"{source} is not a metadisco objective file (no format {FORMAT!r} header)")
    version = payload.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UserError(f"{source} is damaged: its version is {version!r}, not an integer")
    if version > VERSION:
        raise UserError(f"{source} has format version {version}, newer than this metadisco reads ({VERSION}); "
                        "upgrade metadisco")
    if version < 1:
        raise UserError(f"{source} has an invalid format version {version}")
    spec, meta = payload.get("spec"), payload.get("meta")
    if not isinstance(spec, dict) or not isinstance(meta, dict):
        raise UserError(f"{source} is damaged: it lacks its 'spec' or 'meta' mapping")
    digest = payload.get("sha256")
    if not isinstance(digest, str):
        raise UserError(f"{source} is damaged or was not written by metadisco: it has no checksum (sha256)")
    try:
        actual = _checksum(spec, meta)
    except Exception:  # msgpack cannot re-serialise what it read: damaged either way
        actual = None
    if actual != digest:
        raise UserError(f"{source} is damaged: its checksum does not match its contents")
    try:
        objective = Objective.from_spec(spec)
    except UserError as e:
        raise UserError(f"{source}: {e}") from None
    except (TypeError, ValueError) as e:
        raise UserError(f"{source} has an invalid spec: {e}") from None
    return objective, check_meta(objective, meta, f"{source}'s meta-parameters")


def load_objective(path: str | os.PathLike) -> tuple[Objective, dict]:
    """Read an objective file -> (objective, meta_params); a missing or bad file is a one-line `UserError`."""
    data = read_bounded_bytes(path, "objective file", MAX_FILE_BYTES,
                              "an objective file is bounded by metadisco.core.limits")
    return objective_from_bytes(data, f"objective file {str(path)!r}")
