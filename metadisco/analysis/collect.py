"""Where (r, A) fall while training: a 2-D histogram of the ratios and normalised advantages that the drift
sees in a real (short) training run with a given objective, to weight distillation by.

The objective's drift is wrapped in `RecordingDrift`, which passes its inputs to the host with
`jax.debug.callback` (forward pass of every minibatch step) and returns the wrapped drift unchanged, so the
run is the ordinary trainer (`metadisco.runs.seeds.train_seeds`) with the ordinary objective. Counts are sums, so
the result does not depend on the order in which callbacks arrive.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np

from metadisco.objectives import Objective
from metadisco.objectives.registry import DriftInputs, Piece, Progress
from metadisco.runs.seeds import resolve_config, train_seeds

_SINKS: dict[int, dict] = {}
_LOCK = threading.Lock()
_IDS = itertools.count()


@dataclass(frozen=True)
class RecordingDrift(Piece):
    """`inner`'s drift, recording a histogram of its (r, A) inputs into sink `sink`."""

    inner: Piece
    sink: int
    r_edges: tuple[float, ...]
    a_edges: tuple[float, ...]

    def zero_meta(self):
        return self.inner.zero_meta()

    def __call__(self, meta, inputs: DriftInputs, progress: Progress):
        jax.debug.callback(self._record, inputs.ratio, inputs.advantage)
        return self.inner(meta, inputs, progress)

    def _record(self, ratio, advantage):
        r, a = np.asarray(ratio, np.float64).ravel(), np.asarray(advantage, np.float64).ravel()
        counts, _, _ = np.histogram2d(r, a, bins=[np.asarray(self.r_edges), np.asarray(self.a_edges)])
        with _LOCK:
            sink = _SINKS[self.sink]
            sink["counts"] += counts
            sink["total"] += r.size


@dataclass
class Histogram:
    """Counts of (r, A) samples per cell: counts [n_r, n_a] over the cells between the edges."""

    r_edges: np.ndarray
    a_edges: np.ndarray
    counts: np.ndarray
    total: int  # samples seen, including those outside the edges

    @property
    def r_centres(self) -> np.ndarray:
        return 0.5 * (self.r_edges[1:] + self.r_edges[:-1])

    @property
    def a_centres(self) -> np.ndarray:
        return 0.5 * (self.a_edges[1:] + self.a_edges[:-1])

    @property
    def coverage(self) -> float:
        """Fraction of all samples that fell inside the edges."""
        return float(self.counts.sum() / max(self.total, 1))

    def mesh(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(r, A, weight), each [n_a, n_r], at the cell centres (the layout of `analysis.surfaces`)."""
        r, a = np.meshgrid(self.r_centres, self.a_centres)
        return r, a, self.counts.T


def collect_histogram(env_id: str, objective: Objective, meta: Any, timesteps: int | None = None,
                      overrides=(), seeds: int = 1, seed: int = 0, r_edges=None, a_edges=None) -> Histogram:
    """Train `objective` briefly on `env_id` and count its (r, A) inputs. Default cells: r in [0.5, 1.5] in
    steps of 0.02, A in [-8, 8] in steps of 0.4."""
    r_edges = np.linspace(0.5, 1.5, 51) if r_edges is None else np.asarray(r_edges, np.float64)
    a_edges = np.linspace(-8.0, 8.0, 41) if a_edges is None else np.asarray(a_edges, np.float64)
    sink = next(_IDS)
    _SINKS[sink] = {"counts": np.zeros((r_edges.size - 1, a_edges.size - 1)), "total": 0}
    recording = RecordingDrift(objective.drift, sink, tuple(map(float, r_edges)), tuple(map(float, a_edges)))
    config = resolve_config(env_id, None, overrides, timesteps)
    try:
        # One device: on several, the padding runs (copies of real seeds) would be counted too.
        train_seeds(env_id, replace(objective, drift=recording), meta, config, seeds, seed,
                    devices=jax.local_devices()[:1])
        jax.effects_barrier()  # every callback has run
        found = _SINKS[sink]
    finally:
        _SINKS.pop(sink, None)
    return Histogram(r_edges, a_edges, found["counts"], int(found["total"]))
