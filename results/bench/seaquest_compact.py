"""Is gymnax's Seaquest compaction (a scatter-add over 100-row entity buffers) faster as a gather or a matmul?
Each variant is checked equal to gymnax's `compact` on random buffers first, then timed vmapped over 64 envs
(as the trainer steps them), alternating, median of 30 calls per round, 3 rounds.

    python results/bench/seaquest_compact.py > results/bench/seaquest_compact.txt
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments.minatar.seaquest_helpers import MAX_ENTITIES, compact

ENVS, COLUMNS = 64, 5


def by_sort(entities, keep):
    """The kept rows' indices from a stable argsort of ~keep, gathered."""
    order = jnp.argsort(~keep, stable=True)
    count = jnp.sum(keep, dtype=jnp.int32)
    return jnp.where((jnp.arange(MAX_ENTITIES) < count)[:, None], entities[order], 0), count


def by_count(entities, keep):
    """Slot j's source row: how many rows have fewer than j + 1 kept rows up to them (no sort), gathered."""
    ranks = jnp.cumsum(keep.astype(jnp.int32))
    source = jnp.sum(ranks[None, :] <= jnp.arange(MAX_ENTITIES)[:, None], axis=1, dtype=jnp.int32)
    source = jnp.minimum(source, MAX_ENTITIES - 1)
    return jnp.where((jnp.arange(MAX_ENTITIES) < ranks[-1])[:, None], entities[source], 0), ranks[-1]


def by_matmul(entities, keep):
    """A 0/1 [slot, row] matrix times the rows in float32 (exact: the values are small integers)."""
    ranks = jnp.cumsum(keep.astype(jnp.int32))
    select = keep[None, :] & ((ranks - 1)[None, :] == jnp.arange(MAX_ENTITIES)[:, None])
    moved = select.astype(jnp.float32) @ entities.astype(jnp.float32)
    return moved.astype(entities.dtype), ranks[-1]


VARIANTS = {"scatter-add (gymnax)": compact, "stable sort + gather": by_sort, "rank count + gather": by_count,
            "0/1 matmul": by_matmul}


def random_buffers(seed: int):
    rng = np.random.default_rng(seed)
    entities = jnp.asarray(rng.integers(-1, 10, (ENVS, MAX_ENTITIES, COLUMNS)), jnp.int32)
    count = rng.integers(0, 30, ENVS)
    active = np.arange(MAX_ENTITIES)[None] < count[:, None]
    return entities, jnp.asarray(active & (rng.random((ENVS, MAX_ENTITIES)) < 0.7))


def main() -> None:
    fns = {name: jax.jit(jax.vmap(fn)) for name, fn in VARIANTS.items()}
    for seed in range(20):
        entities, keep = random_buffers(seed)
        expected = fns["scatter-add (gymnax)"](entities, keep)
        for name, fn in fns.items():
            got = fn(entities, keep)
            assert all(bool((a == b).all()) for a, b in zip(got, expected, strict=True)), name
    print(f"all variants equal gymnax's compact on 20 random batches of {ENVS} x [{MAX_ENTITIES}, {COLUMNS}] buffers")
    entities, keep = random_buffers(0)
    times = {name: [] for name in fns}
    for _ in range(3):
        for name, fn in fns.items():
            jax.block_until_ready(fn(entities, keep))
            for _ in range(30):
                start = time.perf_counter()
                jax.block_until_ready(fn(entities, keep))
                times[name].append(time.perf_counter() - start)
    base = np.median(times["scatter-add (gymnax)"])
    for name, t in times.items():
        print(f"{name:22s} {np.median(t) * 1e6:8.0f} us per call ({ENVS} envs)   {base / np.median(t):5.2f}x gymnax's")


if __name__ == "__main__":
    main()
