"""Test-session setup: several CPU devices (for sharding tests), and JAX's persistent compilation cache only
when asked for.

Compilation dominates JAX tests, so compiled trainers are shared through module fixtures, and released when
their file is done (`_release_compiled_programs`). The persistent cache is off unless JAX_COMPILATION_CACHE_DIR is
set (`JAX_COMPILATION_CACHE_DIR=$PWD/.jax_cache pytest`): on a fresh clone it saves little (tests/trainers with
tests/meta/test_discovery.py: 652 s with a cold cache, 707 s without, 310 s warm). A contributor rerunning the
suite gains the 2x of a warm cache by setting the variable; the command-line children the tests start inherit
the choice.
"""

import gc
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

import jax  # noqa: E402  (after the environment above)
import pytest  # noqa: E402

# XLA:CPU's LLVM optimisation level for the fast tests: 1 instead of the default 3. The fast tests' time is mostly
# compilation (their programs run for milliseconds), and at level 1 a tiny CartPole PPO program compiles in about
# half the time (16 s against 31-36 s on 2 loaded cores). Level 0 compiles faster still but runs env code
# 5x slower (tests/envs/test_seaquest.py: 275 s against 57 s) and changes float results in their last bits (a
# start-point digest test failed there); level 1 passed both. The slow tests, whose point is learning at a real size
# and bit-identity with committed runs, keep XLA's default: the level is lowered only when the fast tests alone are
# selected (`-m 'not slow'`, pyproject's addopts), and never over a level the contributor set in XLA_FLAGS.
FAST_TESTS_XLA_FLAG = "--xla_backend_optimization_level=1"


def pytest_configure(config):
    flags = os.environ.get("XLA_FLAGS", "")
    if config.option.markexpr == "not slow" and "xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {FAST_TESTS_XLA_FLAG}".strip()  # before JAX's backend starts


@pytest.fixture(scope="module", autouse=True)
def _release_compiled_programs():
    """Free each test file's compiled programs when the file is done.

    A test process compiles thousands of XLA programs and JAX keeps every one, each with about three memory
    mappings of JIT-compiled code per kernel: without this a worker reached 59,919 mappings near the end of the
    suite, against Linux's limit of 65,530 per process (vm.max_map_count), and CI's workers died
    inside XLA's compiler near the end of the run, several times. With it the peak was 15,228 and the
    suite ran 1.8x faster (47.5 -> 26.9 min). Files share compiled programs through module fixtures, so
    clearing at a file's end recompiles nothing a file shares within itself.
    """
    yield
    jax.clear_caches()
    gc.collect()
