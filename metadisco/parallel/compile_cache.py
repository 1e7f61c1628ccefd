"""JAX's persistent compilation cache for the command line, and a count of its hits.

Compiling a trainer takes seconds (more than training it, for short runs); a second `train`, `evaluate` or
quickstart with the same shapes reads the compiled program back from disk instead. The cache lives under the
user's cache folder ($XDG_CACHE_HOME/metadisco/jax, else ~/.cache/metadisco/jax) unless the user points JAX
elsewhere with JAX_COMPILATION_CACHE_DIR. JAX keys entries by the program, the devices and the jax / jaxlib
versions, so a stale entry is never used. The folder is not size-limited (JAX's limit needs the `filelock`
package); deleting it is always safe.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Programs that compile faster than this are not worth a file (JAX's default is 1 s; a small trainer's
# evaluation helpers take about half that).
MIN_COMPILE_SECONDS = 0.5

_hits = 0
_listening = False


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "metadisco" / "jax"


def configure(enabled: bool = True) -> Path | None:
    """Turn the cache on (default folder, unless JAX_COMPILATION_CACHE_DIR is set) or off; the folder used.

    Call before JAX's first compilation: JAX opens the cache once.
    """
    if not enabled:
        os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
        if "jax" in sys.modules:
            import jax

            jax.config.update("jax_enable_compilation_cache", False)
        return None
    path = Path(os.environ.get("JAX_COMPILATION_CACHE_DIR") or default_dir())
    settings = {"JAX_COMPILATION_CACHE_DIR": str(path),
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": str(MIN_COMPILE_SECONDS)}
    for name, value in settings.items():
        os.environ.setdefault(name, value)  # the user's own settings win
    if "jax" in sys.modules:  # imported already: its config has read the environment; set what is unset
        import jax

        if not jax.config.jax_compilation_cache_dir:
            jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
    return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])


def _count(event: str, **_kwargs) -> None:
    global _hits
    if event == "/jax/compilation_cache/cache_hits":
        _hits += 1


def hits() -> int:
    """Programs read back from the persistent cache so far in this process (start counting on first call)."""
    global _listening
    if not _listening:
        import jax

        jax.monitoring.register_event_listener(_count)
        _listening = True
    return _hits
