"""The gridworlds LPG was discovered on (Oh et al., "Discovering Reinforcement Learning Algorithms", NeurIPS 2020,
appendix; as TA-LPG's code `EmptyJackson/groove` has them, `environments/gridworld/`), as `gridworld/<mode>` envs.

An agent walks a square grid (actions up, down, left, right, stay; walls block) collecting objects by stepping on
them. Each object's kind has a reward, a probability of ending the episode when collected and a probability per step
of respawning once collected; an episode also ends at a time limit (a truncation here). Tabular modes (`dense`,
`sparse`, `long`, `longer`, `long_dense`) observe a one-hot of (position, which objects exist) and respawn objects
where they were; `rand_*` modes observe one-hot maps of the agent and of each kind's objects, and respawn objects
at random free cells. Both append the step count x 0.001, as groove does.

A mode's numbers are groove's (`configs.ENV_MODE_PARAMS`). Its level (the start and the objects' home cells), which
groove draws per agent lifetime, is fixed here, so that an env id is one task: `dense` takes groove's default level;
every other mode draws its level once with numpy's generator seeded by the mode's name (`level_of`). Where groove's
random respawn tests free cells with `isin(cells, walls)` on a boolean wall mask (which excludes cells 0 and 1,
not the walls), this reads the mask.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.envs.core import EnvSpec, EnvStep

PREFIX = "gridworld/"  # metadisco.envs.registry.GRIDWORLD_PREFIX
NUM_ACTIONS = 5  # up, down, left, right, stay


@dataclass(frozen=True)
class Mode:
    """One of groove's gridworld modes: per object its kind, per kind its reward, termination and respawn
    probabilities."""

    grid_size: int
    max_steps: int
    obj_kinds: tuple[int, ...]
    rewards: tuple[float, ...]
    p_terminate: tuple[float, ...]
    p_respawn: tuple[float, ...]
    tabular: bool
    walls: tuple[int, ...] = ()


def _column_wall(size: int, column: int, gaps: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(row * size + column for row in range(size) if row not in gaps)


def _row_wall(size: int, row: int, gaps: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(row * size + col for col in range(size) if col not in gaps)


MODES: dict[str, Mode] = {
    "dense": Mode(11, 500, (0, 0, 1, 2), (1.0, -1.0, -1.0), (0.0, 0.5, 0.0), (0.05, 0.1, 0.5), True),
    "sparse": Mode(13, 50, (0, 1), (1.0, -1.0), (1.0, 1.0), (0.0, 0.0), True),
    "long": Mode(11, 1000, (0, 0, 1, 1), (1.0, -1.0), (0.0, 0.5), (0.01, 1.0), True),
    "longer": Mode(9, 2000, (0, 0, 1, 1, 1), (1.0, -1.0), (0.1, 0.8), (0.01, 1.0), True,
                   _column_wall(9, 4, (1, 7))),
    "long_dense": Mode(11, 2000, (0, 0, 0, 0), (1.0,), (0.0,), (0.005,), True,
                       tuple(sorted(set(_column_wall(11, 5, (0, 7)) + _row_wall(11, 4, (2, 8)))))),
    "rand_dense": Mode(11, 500, (0, 0, 1, 2), (1.0, -1.0, -1.0), (0.0, 0.5, 0.0), (0.05, 0.1, 0.5), False),
    "rand_long": Mode(11, 1000, (0, 0, 1, 1), (1.0, -1.0), (0.0, 0.5), (0.01, 1.0), False),
    "rand_small": Mode(7, 500, (0, 0, 1, 1), (1.0, -1.0), (0.0, 0.5), (0.05, 0.1), False, (9, 25)),
    "rand_sparse": Mode(7, 50, (0, 1, 1), (1.0, -1.0), (1.0, 1.0), (1.0, 1.0), False),
    "rand_very_dense": Mode(11, 2000, (0,), (1.0,), (0.0,), (1.0,), False),
}
DEFAULT_DENSE_LEVEL = (0, (1 * 11 + 3, 3 * 11 + 7, 8 * 11 + 7, 9 * 11 + 2))  # groove's GridWorld.default_params


def level_of(name: str) -> tuple[int, tuple[int, ...]]:
    """(start cell, the objects' home cells) of mode `name`: distinct free cells, drawn once per mode."""
    if name == "dense":
        return DEFAULT_DENSE_LEVEL
    mode = MODES[name]
    free = [c for c in range(mode.grid_size**2) if c not in mode.walls]
    cells = np.random.default_rng(zlib.crc32(name.encode())).choice(free, len(mode.obj_kinds) + 1, replace=False)
    return int(cells[0]), tuple(int(c) for c in cells[1:])


class State(NamedTuple):
    time: jax.Array  # int32 steps in this episode
    pos: jax.Array  # int32 cell of the agent
    obj_pos: jax.Array  # [n] int32 cell of each object
    exists: jax.Array  # [n] bool


class GridWorld:
    """One mode's level as a metadisco `Env` (automatic reset)."""

    def __init__(self, name: str):
        self.name, self.mode = name, MODES[name]
        mode, n = self.mode, len(self.mode.obj_kinds)
        self.start, homes = level_of(name)
        self.homes = jnp.asarray(homes, jnp.int32)
        kinds = np.asarray(mode.obj_kinds)
        self.rewards = jnp.asarray(np.asarray(mode.rewards)[kinds], jnp.float32)
        self.p_terminate = jnp.asarray(np.asarray(mode.p_terminate)[kinds], jnp.float32)
        self.p_respawn = jnp.asarray(np.asarray(mode.p_respawn)[kinds], jnp.float32)
        self.kinds = jnp.asarray(kinds, jnp.int32)
        self.walls = jnp.zeros(mode.grid_size**2, bool).at[jnp.asarray(mode.walls, jnp.int32)].set(True)
        cells = mode.grid_size**2
        size = cells * 2**n if mode.tabular else cells * (1 + len(mode.rewards))
        self.spec = EnvSpec(PREFIX + name, (size + 1,), True, NUM_ACTIONS)

    def _obs(self, state: State) -> jax.Array:
        cells = self.mode.grid_size**2
        if self.mode.tabular:
            mask = jnp.sum(jnp.where(state.exists, 2 ** jnp.arange(len(self.mode.obj_kinds)), 0))
            grid = jnp.zeros(self.spec.obs_shape[0] - 1, jnp.float32).at[state.pos + cells * mask].set(1.0)
        else:
            agent = jnp.zeros(cells, jnp.float32).at[state.pos].set(1.0)
            objects = jnp.zeros(cells * len(self.mode.rewards), jnp.float32)
            objects = objects.at[state.obj_pos + cells * self.kinds].max(state.exists.astype(jnp.float32))
            grid = jnp.concatenate([agent, objects])
        return jnp.append(grid, state.time.astype(jnp.float32) * 0.001)

    def _fresh(self, key: jax.Array) -> State:
        n = len(self.mode.obj_kinds)
        obj_pos = self.homes if self.mode.tabular else self._random_cells(key, jnp.int32(self.start),
                                                                              jnp.full((n,), -1, jnp.int32))
        return State(jnp.int32(0), jnp.int32(self.start), obj_pos, jnp.ones(n, bool))

    def _random_cells(self, key: jax.Array, pos: jax.Array, taken: jax.Array) -> jax.Array:
        """One free cell per object (no wall, agent or other object), distinct, uniformly."""
        cells = jnp.arange(self.mode.grid_size**2)
        free = ~self.walls & (cells != pos) & ~jnp.isin(cells, taken)
        return jax.random.choice(key, cells, (len(self.mode.obj_kinds),), replace=False,
                                 p=free / jnp.sum(free)).astype(jnp.int32)

    def reset(self, key: jax.Array):
        state = self._fresh(key)
        return self._obs(state), state

    def _move(self, pos: jax.Array, action: jax.Array) -> jax.Array:
        size = self.mode.grid_size
        row, col = pos // size, pos % size
        step = jnp.select([action == 0, action == 1, action == 2, action == 3],
                          [jnp.where(row > 0, -size, 0), jnp.where(row < size - 1, size, 0),
                           jnp.where(col > 0, -1, 0), jnp.where(col < size - 1, 1, 0)], 0)
        return jnp.where(self.walls[pos + step], pos, pos + step)

    def step(self, key: jax.Array, state: State, action: jax.Array):
        term_key, respawn_key, place_key, reset_key = jax.random.split(key, 4)
        pos = self._move(state.pos, action)
        collected = state.exists & (state.obj_pos == pos)
        respawn = jax.random.bernoulli(respawn_key, self.p_respawn)
        obj_pos = state.obj_pos
        if not self.mode.tabular:  # a respawning object appears at a random free cell
            placed = self._random_cells(place_key, pos, jnp.where(state.exists, state.obj_pos, -1))
            obj_pos = jnp.where(~state.exists & respawn, placed, obj_pos)
        exists = (state.exists | respawn) & ~collected
        reward = jnp.sum(jnp.where(collected, self.rewards, 0.0))
        terminated = jax.random.bernoulli(term_key, jnp.sum(jnp.where(collected, self.p_terminate, 0.0)))
        reached = State(state.time + 1, pos, obj_pos, exists)
        truncated = ~terminated & (reached.time >= self.mode.max_steps)
        final_obs = self._obs(reached)
        done = terminated | truncated
        fresh = self._fresh(reset_key)
        next_state = jax.tree.map(lambda f, r: jnp.where(done, f, r), fresh, reached)
        return next_state, EnvStep(jnp.where(done, self._obs(fresh), final_obs), reward, terminated, truncated,
                                   final_obs, {})
