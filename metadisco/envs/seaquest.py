"""gymnax's Seaquest with 40-row entity buffers instead of 100: the same observations, rewards and episode ends bit
for bit, and its step 3.3x faster on CPU (`python results/bench/seaquest_bounded.py`).

gymnax 1.0.1's `MinSeaquest` keeps each kind of entity (friendly bullets, enemy bullets, fish, enemy subs, divers)
in a fixed buffer of `seaquest_helpers.MAX_ENTITIES = 100` rows, of which the first `count` are live and the rest
zero, and compacts the buffers with scatter-adds several times a step; that work scales with the rows, and made
Seaquest 18-146x slower to step than the other MinAtar games (`results/bench/README.md`). Every helper reads the
row count from that module constant when it is traced, so `BoundedSeaquest` runs gymnax's own code traced with
`CAPACITY` rows instead of copying it.

Why the results are gymnax's exactly. Rows past `count` are zero in both, and every helper masks rows past
`count` (`active_mask`) or only ever adds zero there, so while no buffer would hold more than `CAPACITY`
entities, each operation gives the same live rows in both and the same observation. No buffer ever holds more
than `MOST_ENTITIES` = 34 under gymnax's default `EnvParams` (the only ones metadisco builds), at any point of a
step, per episode (a reset empties every buffer):

- Friendly bullets <= 2: one shot at most every 5 steps (`shot_cool_down`), and a bullet leaves the 10-cell row
  within 10 moves, one a step, the first in the step it is fired.
- Divers <= 2: one spawn attempt every 30 steps (`diver_spawn_speed`), and a diver moves every 6 steps
  (`diver_move_interval` + 1), the first after 5, so it leaves by its 10th move, within 59 steps of spawning.
- Fish and enemy subs together <= 34: at most one spawns a step, at attempts spaced by the spawn speed S (the
  timer is reset at each attempt, blocked or not). An enemy moves at intervals of the move speed M plus 1, the
  first M steps after spawning, so it lives at most 5 + 9 * 6 = 59 steps. Ramping lowers S by one and, every
  other ramp, M by one (to at least 2): M is 2 from the sixth ramp on, when S becomes 14; before it S >= 15. So
  among the enemies alive at step t, those spawned up to that ramp came at least 15 steps apart within the
  last 60 steps (at most 4), and those spawned after it live at most 2 + 9 * 3 = 29 steps (at most 30).
- Enemy bullets <= 34: a sub shoots every 11 steps (`enemy_shot_interval` + 1), first 10 steps after spawning,
  and a bullet lives at most 10 steps; so the bullets alive at step t were shot in the last 10 steps by
  distinct subs spawned at least 10 steps before, all of them alive at step t - 10 (at most 34).

`tests/envs/test_seaquest.py` checks the equality step by step against gymnax's Seaquest on random play and on
play that forces the fastest ramping (surfacing every other step, oxygen and divers held up), where the largest
buffer seen was 21, and checks that no buffer ever exceeds `MOST_ENTITIES`.
"""

from __future__ import annotations

import contextlib
import threading

from gymnax.environments.minatar import seaquest, seaquest_helpers

CAPACITY = 40  # rows per entity buffer: MOST_ENTITIES plus a margin
MOST_ENTITIES = 34  # the most entities any buffer holds under the default EnvParams (the proof above)

# gymnax's helpers read the module constant while they are traced; the lock keeps two threads tracing at once from
# seeing each other's row count (re-entrant: step_env calls get_obs).
_rows_lock = threading.RLock()


@contextlib.contextmanager
def _rows(count: int):
    with _rows_lock:
        before = seaquest_helpers.MAX_ENTITIES, seaquest.MAX_ENTITIES
        seaquest_helpers.MAX_ENTITIES = seaquest.MAX_ENTITIES = count
        try:
            yield
        finally:
            seaquest_helpers.MAX_ENTITIES, seaquest.MAX_ENTITIES = before


class BoundedSeaquest(seaquest.MinSeaquest):
    """gymnax's `MinSeaquest` traced with `CAPACITY`-row entity buffers (exact under its default `EnvParams`)."""

    def step_env(self, key, state, action, params):
        with _rows(CAPACITY):
            return super().step_env(key, state, action, params)

    def reset_env(self, key, params):
        with _rows(CAPACITY):
            return super().reset_env(key, params)

    def get_obs(self, state, params=None, key=None):
        with _rows(CAPACITY):
            return super().get_obs(state, params, key)


def bounded(env, params):
    """`BoundedSeaquest` in place of gymnax's Seaquest when `params` are the defaults its bound is proven for;
    any other env (or Seaquest with other params) as it is."""
    if type(env) is seaquest.MinSeaquest and params == env.default_params:
        return BoundedSeaquest(use_minimal_action_set=env.action_set is env.minimal_action_set)
    return env
