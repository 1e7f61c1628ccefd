"""A FIFO replay buffer of single transitions, as fixed-size arrays (jit / vmap friendly): DQN's (Mnih et al.
2015; PureJaxRL's dqn.py uses flashbax's flat buffer for the same).

    buffer = replay_init(example, capacity)        # example: a pytree of one transition's leaves
    buffer = replay_add(buffer, batch)             # batch: the same pytree with a leading [n] axis
    sample = replay_sample(buffer, key, size)      # [size] transitions drawn uniformly from those held

Shapes: every leaf of `ReplayBuffer.data` is [capacity, ...]. Adding n transitions writes them at positions
`(position + arange(n)) % capacity`, overwriting the oldest once the buffer is full; `size` counts those held (at
most `capacity`). Sampling draws indices uniformly in [0, size): with replacement, as flashbax's uniform sampler.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class ReplayBuffer(NamedTuple):
    data: Any  # pytree of [capacity, ...] arrays
    position: jax.Array  # int32: where the next transition is written
    size: jax.Array  # int32: transitions held, <= capacity


def replay_init(example: Any, capacity: int) -> ReplayBuffer:
    """An empty buffer of `capacity` transitions shaped like `example` (one transition, no leading axis)."""
    data = jax.tree.map(lambda x: jnp.zeros((capacity,) + jnp.shape(x), jnp.asarray(x).dtype), example)
    return ReplayBuffer(data, jnp.int32(0), jnp.int32(0))


def replay_add(buffer: ReplayBuffer, batch: Any) -> ReplayBuffer:
    """`buffer` with the [n] transitions of `batch` written after the newest (n <= capacity)."""
    capacity = jax.tree.leaves(buffer.data)[0].shape[0]
    n = jax.tree.leaves(batch)[0].shape[0]
    if n > capacity:
        raise ValueError(f"cannot add {n} transitions at once to a replay buffer of {capacity}")
    index = (buffer.position + jnp.arange(n, dtype=jnp.int32)) % capacity
    data = jax.tree.map(lambda store, new: store.at[index].set(new), buffer.data, batch)
    return ReplayBuffer(data, (buffer.position + n) % capacity, jnp.minimum(buffer.size + n, capacity))


def replay_sample(buffer: ReplayBuffer, key: jax.Array, size: int) -> Any:
    """[size] transitions drawn uniformly, with replacement, from those held (an empty buffer gives its zeros)."""
    index = jax.random.randint(key, (size,), 0, jnp.maximum(buffer.size, 1))
    return jax.tree.map(lambda store: store[index], buffer.data)
