"""Independent runs (seeds, methods x seeds) sharded over devices, padded when their count does not divide.

    fn = shard_runs(lambda key, meta: train(key, meta).metrics, devices, (0, None))   # keys per run, meta shared
    out = gather(fn(*place((keys, meta), devices, (0, None))), runs)                     # numpy, [runs, ...]

Each of the n devices trains ceil(R / n) of the R runs with `vmap` (`shard_map` over a 1-D mesh), so every core
has work. When n does not divide R, the run axis is padded with copies of the first runs, whose results are
dropped: wall time goes with ceil(R / n) either way, and every real run keeps its own key. Fewer runs than
devices use R devices (`devices_for`).

Several processes (`metadisco.parallel.hosts`, `--distributed`): `devices` are then every process's devices
(`jax.devices()`), every process passes the same host arguments to `place`, and `gather` all-gathers, so each
process holds every result; only process 0 writes.

Determinism: run i always lands on the same device at the same place in its batch for a given R and device
count, so repeating a call gives bit-identical results. Another device count changes the batch each device
vmaps, XLA may then reassociate float sums differently, and results agree statistically, not bitwise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "runs"


def padded_size(runs: int, num_devices: int) -> int:
    """The run count rounded up to a multiple of the device count."""
    return -(-runs // num_devices) * num_devices


def devices_for(runs: int, devices: Sequence) -> list:
    """The devices R runs are split over: all of them, or the first R when there are fewer runs than devices
    (a device holding nothing but padding would only burn a core). Devices of several processes are all kept:
    in a multi-process run every process must hold a share of each program it runs (padding fills them)."""
    devices = list(devices)
    if len({d.process_index for d in devices}) > 1:
        return devices
    return devices[:max(1, min(runs, len(devices)))]


@functools.lru_cache(maxsize=8)
def mesh_of(devices: tuple) -> Mesh:
    """The one device mesh of the package: 1-D over `devices`, axis `AXIS`. Every sharded program (a command's
    seeds and methods, meta-training's population, a sweep's or PBT's runs) splits its leading axis over it."""
    return Mesh(np.asarray(devices), (AXIS,))


def make_mesh(devices=None) -> Mesh:
    """`mesh_of` over `devices`; by default every device of every process (a multi-host run's global mesh)."""
    return mesh_of(tuple(jax.devices() if devices is None else devices))


def _specs(in_axes: tuple) -> tuple:
    return tuple(PartitionSpec(AXIS) if axis == 0 else PartitionSpec() for axis in in_axes)


def shard_runs(fn: Callable, devices: Sequence, in_axes: tuple) -> Callable:
    """jit of `fn` mapped over a leading run axis, that axis split over `devices`.

    `in_axes` has one entry per argument: 0 for a per-run argument (leading run axis), None for one that every
    run shares (copied to every device, unbatched, as `vmap`'s None). The run count given to the result must
    divide by len(devices) (`place` pads it).
    """
    if any(axis not in (0, None) for axis in in_axes):
        raise ValueError(f"in_axes entries must be 0 or None, got {in_axes}")
    mesh = mesh_of(tuple(devices))
    batched = jax.vmap(fn, in_axes=in_axes)

    def runs_on_device(*args):  # this device's runs (the name JAX reports when it traces the program)
        sizes = {jax.tree.leaves(a)[0].shape[0] for a, axis in zip(args, in_axes, strict=True)
                 if axis == 0 and jax.tree.leaves(a)}
        if sizes == {1}:
            # One run here: run it unbatched. A vmap over one run costs about 15% more compile time (batched
            # dots throughout) and gives other last bits than the plain call; this way a seed alone on a device
            # is exactly `jax.jit(fn)(key, ...)`.
            one = [jax.tree.map(lambda x: x[0], a) if axis == 0 else a for a, axis in zip(args, in_axes, strict=True)]
            return jax.tree.map(lambda x: x[None], fn(*one))
        return batched(*args)

    sharded = jax.shard_map(runs_on_device, mesh=mesh, in_specs=_specs(in_axes), out_specs=PartitionSpec(AXIS),
                            check_vma=False)
    return jax.jit(sharded)


def place(args: tuple, devices: Sequence, in_axes: tuple) -> tuple:
    """Host arguments -> global arrays on `devices`: per-run ones (`in_axes` 0) padded to a multiple of
    len(devices) and split over them, shared ones (None) copied to each."""
    devices = tuple(devices)
    mesh = mesh_of(devices)

    def put(x, axis):
        x = np.asarray(x)
        if axis == 0:
            size = padded_size(x.shape[0], len(devices))
            x = np.take(x, np.arange(size) % x.shape[0], axis=0)  # padding: copies of the first runs
        return jax.device_put(x, NamedSharding(mesh, PartitionSpec(AXIS) if axis == 0 else PartitionSpec()))

    return tuple(jax.tree.map(lambda x, axis=axis: put(x, axis), arg) for arg, axis in zip(args, in_axes, strict=True))


def gather(tree, runs: int):
    """Padded results -> numpy, the first `runs` rows (the real runs). In a multi-process run a result spans
    several processes' devices: it is all-gathered first, so every process holds all of it (and goes on with
    the same numbers)."""

    def host(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            from jax.experimental import multihost_utils

            x = multihost_utils.process_allgather(x, tiled=True)
        return np.asarray(x)[:runs]

    return jax.tree.map(host, tree)
