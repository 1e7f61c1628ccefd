"""Every core: one XLA host device per CPU core, chosen before JAX starts, and the devices a command uses.

XLA's CPU backend runs one program on one device, and `vmap` alone keeps a CPU to about one core (the
quickstart kept 1.15 of 2 cores busy). With `--xla_force_host_platform_device_count=N` the CPU appears as N
devices; work that is independent (population members, seeds, methods x seeds) is then sharded over them and
every core has a program to run.

The device count is fixed when JAX creates its backends (its first computation), so it must be chosen before:

    import metadisco.parallel.devices
    metadisco.parallel.devices.use_all_cores()   # before the first JAX computation; or set XLA_FLAGS yourself
    import jax

The `metadisco` command does this for you (`--devices N` to choose another count). On a GPU the flag only adds
CPU devices that nothing uses; the GPUs are the devices.

The command also asks XLA for deterministic GPU kernels (`use_deterministic_gpu`): without
`--xla_gpu_deterministic_ops=true` XLA's GPU scatters and some reductions may sum in a different order from run to
run, and its autotuner may pick other kernels on another machine. The CPU backend is deterministic either way (its
numbers are the same with the flag).
"""

from __future__ import annotations

import os
import re
import sys

from metadisco.core.errors import SettingError, UserError

DISTRIBUTED_ENV_VARS = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")


def wants_distributed() -> bool:
    """True when the usual environment variables ask for a multi-process run (read without importing JAX)."""
    return bool(os.environ.get("JAX_COORDINATOR_ADDRESS")) and bool(os.environ.get("JAX_NUM_PROCESSES"))


DEVICE_FLAG = "--xla_force_host_platform_device_count"
_FLAG_RE = re.compile(r"--xla_force_host_platform_device_count=(\S*)")


DETERMINISTIC_FLAG = "--xla_gpu_deterministic_ops"
_DETERMINISTIC_RE = re.compile(r"--xla_gpu_deterministic_ops(?:=(\S*))?")


def use_deterministic_gpu() -> None:
    """Ask XLA for deterministic GPU kernels, before JAX starts, unless XLA_FLAGS already names the flag (the
    user's choice wins: `XLA_FLAGS=--xla_gpu_deterministic_ops=false` trades bit-identity for speed)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if _DETERMINISTIC_RE.search(flags) is None:
        os.environ["XLA_FLAGS"] = " ".join([*flags.split(), f"{DETERMINISTIC_FLAG}=true"])


def gpu_deterministic_ops() -> bool:
    """Whether XLA_FLAGS asks for deterministic GPU kernels (what a GPU run records in its devices.json)."""
    match = _DETERMINISTIC_RE.search(os.environ.get("XLA_FLAGS", ""))
    return match is not None and (match.group(1) or "true").lower() in ("true", "1")


def cpu_count() -> int:
    """Cores this process may run on (its CPU affinity, so `taskset` and container limits count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def flag_in_env() -> int | None:
    """The host device count that XLA_FLAGS asks for, or None when it does not set one."""
    match = _FLAG_RE.search(os.environ.get("XLA_FLAGS", ""))
    if match is None:
        return None
    try:
        return int(match.group(1))
    except ValueError:
        return None


def with_device_count(flags: str, count: int) -> str:
    """XLA_FLAGS `flags` with its host device count (if any) replaced by `count`; every other flag kept."""
    return " ".join([*_FLAG_RE.sub("", flags).split(), f"{DEVICE_FLAG}={count}"])


def _set_flag(count: int) -> None:
    os.environ["XLA_FLAGS"] = with_device_count(os.environ.get("XLA_FLAGS", ""), count)


def jax_started() -> bool:
    """True once JAX has created its backends: from then on the device count cannot change."""
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge  # no public equivalent in jax 0.10

    return xla_bridge.backends_are_initialized()


def use_all_cores(count: int | None = None, *, override: bool = True) -> int:
    """Ask for `count` CPU devices (default: one per core) before JAX starts; return the count asked for.

    With `override=False` an XLA_FLAGS that already sets the count wins (the command line's default: the
    user's own XLA_FLAGS are respected). Raises RuntimeError once JAX has started, when it is too late.
    """
    wanted = count if count is not None else cpu_count()
    if wanted < 1:
        raise ValueError(f"a device count must be a positive integer, got {wanted}")
    if not override and flag_in_env() is not None:
        return flag_in_env()
    if jax_started():
        import jax

        if jax.default_backend() == "cpu" and jax.local_device_count() != wanted:
            raise RuntimeError(f"JAX has already started with {jax.local_device_count()} CPU device(s); call "
                               f"use_all_cores() before the first JAX computation, or start Python with "
                               f"XLA_FLAGS={DEVICE_FLAG}={wanted}")
        return wanted
    if "jax" in sys.modules:
        # Imported but not started: JAX's own setting (it takes precedence over XLA_FLAGS).
        import jax

        jax.config.update("jax_num_cpu_devices", wanted)
    _set_flag(wanted)  # also for subprocesses, and for a JAX imported later
    return wanted


ONE_PROCESS_DEVICES = ("--devices selects devices of one process; a multi-process run uses every device of every "
                       "process")


def select(count: int | None = None) -> list:
    """The first `count` devices of this process (default: all of them), for the commands' meshes; in a
    multi-process run (`--distributed`) every device of every process, and `count` must be None."""
    import jax

    if jax.process_count() > 1:
        if count is not None:
            raise UserError(ONE_PROCESS_DEVICES)
        return jax.devices()
    devices = jax.local_devices()
    if count is None:
        return devices
    if count < 1:
        raise SettingError(f"devices must be a positive integer, got {count}", ("devices",))
    if count > len(devices):
        raise SettingError(f"devices {count}: this process has only {len(devices)} device(s) "
                           f"({devices[0].platform})", ("devices",))
    return devices[:count]
