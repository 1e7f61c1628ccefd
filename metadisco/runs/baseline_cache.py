"""Baselines measured once per machine: PPO's reference scores and a random policy's returns, shared by
`meta-train`, `probe` and `evaluate`.

Before its first generation a meta-training run trains PPO (the objective's baseline) on reference seeds of
every task and rolls out a random policy on every env, and at its first scoring of the ES mean it trains PPO's
control on the same fresh seeds; the probe and `evaluate` roll the random policy out again. These figures are
pure functions of their settings, so a second run with the same settings reads them back instead of training.
Each figure is one small JSON file under the user's cache folder ($XDG_CACHE_HOME/metadisco/baselines, else
~/.cache/metadisco/baselines, beside the compilation cache; METADISCO_BASELINE_CACHE_DIR wins when set), named
by a SHA-256 of everything that determines it: the caller's settings (env id, training length, the whole
trainer config with its traced hyperparameters, seed keys, rows, device count, objective spec), the JAX backend
and device kind, the versions of the numerical packages, and `code_version()`: the package version and a hash
of the source files that can change the numbers. A different value of any of them is another file, so a stale
entry is never read. Numbers are stored as JSON floats, which round-trip float64 exactly: a run that reads the
cache computes bit for bit what a run that measured does.

A file that cannot be read back as what was written (truncated, edited, another key) is reported on stderr and
measured again, never trusted. Plugins' envs and pieces are not cached (their code is not hashed). The command
line turns the cache on (`--no-baseline-cache` turns it off); from Python it is off until `configure()`.
Deleting the folder is always safe.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from metadisco.core.errors import UserError
from metadisco.core.io import atomic_write_text, to_jsonable

FORMAT = "metadisco-baseline-1"
# Source folders whose code cannot change a baseline's number (the command line, figures, analysis): editing
# them keeps the cache. Everything else under metadisco/ is hashed.
UNHASHED = ("cli", "analysis", "bench", "figures")  # folders of the package that cannot change a measured number
PACKAGES = ("jax", "jaxlib", "numpy", "gymnax", "brax", "flax", "optax", "chex")

_root: Path | None = None
counts: Counter = Counter()  # "hit", "miss", "damaged", "uncached" in this process (tests and logs read it)


def default_dir() -> Path:
    """METADISCO_BASELINE_CACHE_DIR when set (tests point it at a temporary folder), else beside the
    compilation cache."""
    from metadisco.parallel.compile_cache import default_dir as jax_dir

    return Path(os.environ.get("METADISCO_BASELINE_CACHE_DIR") or jax_dir().parent / "baselines")


def configure(enabled: bool = True, root: str | Path | None = None) -> Path | None:
    """Turn the cache on (in `root`, default `default_dir()`) or off; the folder used (None: off)."""
    global _root
    _root = (Path(root) if root is not None else default_dir()) if enabled else None
    return _root


def folder() -> Path | None:
    return _root


def hashed_files() -> list[Path]:
    """The package's source files that can change a measured number: every one but those in `UNHASHED`."""
    package = Path(__file__).resolve().parent.parent  # metadisco/, this module being metadisco/runs/...
    return [path for path in sorted(package.rglob("*.py"))
            if path.relative_to(package).parts[0] not in UNHASHED]


@functools.cache
def code_version() -> str:
    """The package version and a SHA-256 of the source files that can change a measured number."""
    from metadisco import __version__

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in hashed_files():
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{__version__}+{digest.hexdigest()[:16]}"


@functools.cache
def _platform() -> dict:
    """What else the numbers depend on: package versions, the backend and its device kind."""
    import jax

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    out = {"packages": versions, "backend": jax.default_backend(), "device_kind": jax.devices()[0].device_kind,
           "code": code_version()}
    if out["backend"] == "gpu":  # another kernel choice, other bits
        from metadisco.parallel.devices import gpu_deterministic_ops

        out["gpu_deterministic_ops"] = gpu_deterministic_ops()
    return out


def cacheable(env_id: str, objective=None) -> bool:
    """False for a plugin's env or piece: its code is outside `code_version()`, so its numbers are not cached."""
    from metadisco.envs.registry import _REGISTERED

    plugin_piece = objective is not None and any(spec.get("plugin") for spec in objective.to_spec().values())
    return env_id not in _REGISTERED and not plugin_piece


def key_of(kind: str, settings: dict) -> tuple[str, dict]:
    """(file name, the identity written into the file) of one figure."""
    identity = to_jsonable({"format": FORMAT, "kind": kind, "settings": settings, **_platform()})
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}.json", identity


def digest(array) -> str:
    """A short SHA-256 of an array's dtype, shape and bytes (seed keys in a cache key)."""
    import numpy as np

    array = np.ascontiguousarray(np.asarray(array))
    text = f"{array.dtype.str}{array.shape}".encode()
    return hashlib.sha256(text + array.tobytes()).hexdigest()[:32]


def _warn(message: str) -> None:
    sys.stderr.write(f"metadisco: warning: {message}\n")
    sys.stderr.flush()


def _read(path: Path, identity: dict) -> float | None:
    """The stored value, or None (absent; or damaged, which is reported)."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:  # unreadable is not damaged (metadisco.core.io): say which
        _warn(f"cannot read the baseline cache file {path} ({e.strerror or type(e).__name__}); measuring again")
        counts["damaged"] += 1
        return None
    except UnicodeDecodeError:
        text = ""  # not JSON either: damaged
    try:
        doc = json.loads(text)
        ok = isinstance(doc, dict) and doc.get("identity") == identity and isinstance(doc.get("value"), (int, float))
    except (json.JSONDecodeError, RecursionError):
        ok = False
    if not ok:
        _warn(f"damaged baseline cache file {path} (not the figure its name promises); measuring again")
        counts["damaged"] += 1
        return None
    return float(doc["value"])


def cached(kind: str, settings: dict, measure: Callable[[], float], use: bool = True,
           on_hit: Callable[[Path], None] | None = None) -> float:
    """`measure()`, or the figure a previous `measure()` with the same `kind` and `settings` stored (then
    `on_hit(path)`, e.g. to say so). `use` False (a plugin's env or piece, see `cacheable`) measures without
    the cache."""
    return started(kind, settings, lambda: measure, use, on_hit)()


def started(kind: str, settings: dict, start: Callable[[], Callable[[], float]], use: bool = True,
            on_hit: Callable[[Path], None] | None = None) -> Callable[[], float]:
    """`cached` for a measurement that runs in the background (a computation JAX dispatches without waiting):
    on a miss `start()` begins it now and returns the call that waits for its figure. Returns the call that gives
    the figure (stored in the cache on its first call), so that several measurements can run at once."""
    if _root is None or not use:
        counts["uncached"] += 1
        finish = start()
        return functools.cache(lambda: float(finish()))
    name, identity = key_of(kind, settings)
    path = _root / name
    value = _read(path, identity)
    if value is not None:
        counts["hit"] += 1
        if on_hit is not None:
            on_hit(path)
        return lambda: value
    counts["miss"] += 1
    finish = start()

    @functools.cache
    def figure() -> float:
        value = float(finish())
        # JSON has NaN as an extension Python reads back; store it so a "no episode ended" is not measured again.
        text = json.dumps({"identity": identity, "value": value}, indent=1, allow_nan=True) + "\n"
        try:
            atomic_write_text(path, text)
        except UserError as e:  # a full disk or a read-only cache folder costs a measurement, no more
            _warn(f"{e}; continuing without the baseline cache")
        return value

    return figure
