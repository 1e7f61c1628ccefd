"""Test-session setup: JAX's persistent compilation cache and several CPU devices (for sharding tests).

Compilation dominates JAX tests, so compiled trainers are shared through session fixtures and cached on disk
across sessions.
"""

import os
import tempfile
from pathlib import Path

# Must be set before jax is imported anywhere.
_CACHE = Path(__file__).resolve().parent.parent / ".jax_cache"
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(_CACHE))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The baseline cache (metadisco.runs.baseline_cache) of the commands the tests run: a fresh folder per session, never
# the user's own.
os.environ.setdefault("METADISCO_BASELINE_CACHE_DIR", tempfile.mkdtemp(prefix="metadisco-baselines-"))

import jax  # noqa: E402

jax.config.update("jax_compilation_cache_dir", str(_CACHE))
