"""Hosts: multi-host start-up, the writer process, and global arrays on the mesh (`metadisco.parallel.sharding`).

JAX's multi-controller runtime: every process runs the same program; `jax.devices()` lists the devices of all
processes, and a `jit` whose arrays are sharded over the mesh runs each member on the device that holds it.
Values that every process needs (ES state, keys, fitness) are kept fully replicated, so any process can read
them; only process 0 writes files.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from metadisco.core.errors import MetadiscoWarning, UserError
from metadisco.parallel.devices import DISTRIBUTED_ENV_VARS, wants_distributed  # noqa: F401 (re-exported)
from metadisco.parallel.sharding import AXIS

DEVICES_FILE = "devices.json"
# How long the coordination service waits for a process's heartbeat before it declares it dead and stops the
# others (JAX's default, 100 s, kept a survivor of a dead peer waiting over a minute).
HEARTBEAT_TIMEOUT_S = 15


def initialize() -> None:
    """`jax.distributed.initialize()`, with JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID when set
    (otherwise JAX's own cluster detection: SLURM, Open MPI, ...). Must run before any other JAX call."""
    kwargs = {}
    if os.environ.get("JAX_NUM_PROCESSES"):
        try:
            kwargs["num_processes"] = int(os.environ["JAX_NUM_PROCESSES"])
            kwargs["process_id"] = int(os.environ.get("JAX_PROCESS_ID", ""))
        except ValueError:
            raise UserError(f"{', '.join(DISTRIBUTED_ENV_VARS)} must be set together, the last two as "
                            "integers") from None
    # CPU devices of several processes talk through gloo (JAX's CPU collectives); GPUs are not affected.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(**kwargs, heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT_S)
    except (ValueError, RuntimeError) as e:
        raise UserError(f"cannot start the multi-process run: {str(e).splitlines()[0]}") from None


def is_writer() -> bool:
    """Only process 0 writes files."""
    return jax.process_index() == 0


def check_population(population_size: int, mesh: Mesh) -> None:
    n = mesh.devices.size
    if population_size % n:
        lower = population_size - population_size % n
        fewer = max(k for k in range(1, n) if population_size % k == 0)
        raise UserError(f"strategy.population_size {population_size} does not divide by the {n} devices; "
                        f"use a multiple of {n} (e.g. {lower or n} or {lower + n}), or --devices {fewer}")


def sharded(mesh: Mesh) -> NamedSharding:
    """Leading (population) axis split over the devices."""
    return NamedSharding(mesh, PartitionSpec(AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def to_global(tree, mesh: Mesh):
    """Host values (the same on every process) -> fully replicated global arrays on the mesh."""
    sharding = replicated(mesh)

    def put(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])

    return jax.tree.map(put, tree)


def to_host(tree):
    """Fully replicated global arrays -> numpy (every process holds a whole copy)."""
    return jax.tree.map(lambda x: np.asarray(x.addressable_data(0)) if isinstance(x, jax.Array) else np.asarray(x),
                        tree)


def record_devices(run_dir: Path, mesh: Mesh) -> None:
    """Write RUN_DIR/devices.json: the device count results are bit-identical for (a resume checks it), and on a
    GPU whether its kernels were deterministic (`metadisco.parallel.devices.use_deterministic_gpu`)."""
    from metadisco.core.io import atomic_write_text
    from metadisco.parallel.devices import gpu_deterministic_ops

    platform = mesh.devices.flat[0].platform
    note = {"devices": int(mesh.devices.size), "processes": jax.process_count(), "platform": platform}
    if platform == "gpu":
        note["gpu_deterministic_ops"] = gpu_deterministic_ops()
    atomic_write_text(Path(run_dir) / DEVICES_FILE, json.dumps(note, indent=2) + "\n")


def warn_if_other_devices(run_dir: Path, mesh: Mesh) -> None:
    """On resume: warn when the run was made on another device count. It goes on, but bit-identity with an
    uninterrupted run is no longer promised: each device vmaps another share of the population, and XLA may
    sum floats in another order."""
    path = Path(run_dir) / DEVICES_FILE
    try:
        before = int(json.loads(path.read_text())["devices"])
    except (OSError, ValueError, KeyError, TypeError):
        return  # a run from before the file existed, or a damaged note: nothing to compare
    now = int(mesh.devices.size)
    if before != now:
        warnings.warn(f"{run_dir} was run on {before} device(s) and resumes on {now}: it continues, but the rest "
                      f"of the run is not guaranteed to be bit-identical to an uninterrupted run on {before} "
                      "device(s) (floats may be summed in another order); it agrees statistically",
                      MetadiscoWarning, stacklevel=3)
