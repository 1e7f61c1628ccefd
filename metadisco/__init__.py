"""metadisco: discover reinforcement-learning objectives by evolution, in JAX."""

import os as _os

__version__ = "0.1.0"

# XLA's multi-threaded Eigen pool on CPU sometimes wedges for good inside block_until_ready on vmapped
# training graphs (all threads parked in futex, 0% CPU; seen here in ~3 of 10 full-size runs, and reported
# upstream). Single-threaded Eigen avoids it at little cost for these small networks. It must be set before
# JAX creates its CPU backend; set METADISCO_KEEP_XLA_FLAGS=1 to leave XLA_FLAGS alone.
if not _os.environ.get("METADISCO_KEEP_XLA_FLAGS"):
    _flags = _os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in _flags:
        _os.environ["XLA_FLAGS"] = (_flags + " --xla_cpu_multi_thread_eigen=false").strip()
