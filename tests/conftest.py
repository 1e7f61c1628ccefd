"""Test-session setup: several CPU devices (for sharding tests), and JAX's persistent compilation cache only
when asked for.

Compilation dominates JAX tests, so compiled trainers are shared through session and module fixtures. The
persistent cache is off unless JAX_COMPILATION_CACHE_DIR is set (`JAX_COMPILATION_CACHE_DIR=$PWD/.jax_cache pytest`):
on a fresh clone it saves little (tests/trainers with tests/meta/test_discovery.py: 652 s with a cold cache, 707 s
without, 310 s warm), and writing it is the one place the suite crashed: JAX 0.10.2's CPU executable
serialisation segfaulted a test worker near the end of two CI runs (sessions 19 and 20), never here. A
contributor rerunning the suite gains the 2x of a warm cache by setting the variable; the command-line children
the tests start inherit the choice.
"""

import os
import tempfile

# Must be set before jax is imported anywhere.
if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
else:
    os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The baseline cache (metadisco.runs.baseline_cache) of the commands the tests run: a fresh folder per session, never
# the user's own.
os.environ.setdefault("METADISCO_BASELINE_CACHE_DIR", tempfile.mkdtemp(prefix="metadisco-baselines-"))
