"""metadisco's LPG gridworlds (`metadisco.envs.gridworld`) against groove's own GridWorld (EmptyJackson/groove
`environments/gridworld/gridworld.py`), side by side: every tabular mode's geometry (grid, walls, objects, rewards,
level), with each probability rounded to 0 or 1 so that both are deterministic given the actions, played with the
same random actions; observations, rewards and episode ends must be equal at every step (groove's `done` is
metadisco's terminated or truncated; an episode ends in both before the next one starts). The random-respawn modes
(`rand_*`) are not compared: their respawn cells are drawn with other keys in each code (and groove tests free cells
differently, see `metadisco.envs.gridworld`).

    python results/lpg_gridworld/gridworld_vs_groove.py GROOVE_GRIDWORLD_PY [--steps 3000]

GROOVE_GRIDWORLD_PY: groove's gridworld.py (`git show HEAD:environments/gridworld/gridworld.py` of the repository).
"""

from __future__ import annotations

import argparse
import importlib.util
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.envs import gridworld as G


def load(path: str):
    """groove's module, its GridWorld given the `discount` that gymnax 1.x asks of an env (groove was written against
    an older gymnax whose default did not call `is_terminated`); nothing else of it changes."""
    spec = importlib.util.spec_from_file_location("groove_gridworld", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class GridWorld(module.GridWorld):
        def discount(self, state, params):
            return 1.0 - self.is_terminal(state, params)

    module.GridWorld = GridWorld
    return module


def compare(groove, name: str, steps: int, seed: int) -> tuple[int, int]:
    """(rewarded steps, episode ends) of `steps` played alike in mode `name` with its probabilities rounded; raises
    at the first difference."""
    mode = G.MODES[name]
    det = replace(mode, p_terminate=tuple(float(p >= 0.5) for p in mode.p_terminate),
                  p_respawn=tuple(float(p >= 0.5) for p in mode.p_respawn))
    G.MODES[f"{name}_det"] = det
    ours = G.GridWorld(f"{name}_det")
    ours.start, homes = G.level_of(name)
    ours.homes = jnp.asarray(homes, jnp.int32)
    n = len(mode.obj_kinds)
    env = groove.GridWorld(max_grid_size=mode.grid_size, max_n_objs=n, max_n_obj_types=len(mode.rewards), tabular=True)
    params = groove.EnvParams(
        max_steps_in_episode=mode.max_steps, random_respawn=False, auto_collect=True, grid_size=mode.grid_size,
        walls=ours.walls, start_pos=ours.start, n_objs=n, obj_ids=jnp.asarray(mode.obj_kinds),
        static_obj_poss=ours.homes, obj_rewards=jnp.asarray(det.rewards), obj_p_terminate=jnp.asarray(det.p_terminate),
        obj_p_respawn=jnp.asarray(det.p_respawn))
    g_obs, g_state = env.reset_env(jax.random.PRNGKey(0), params)
    o_obs, o_state = ours.reset(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(np.asarray(g_obs), np.asarray(o_obs))
    g_step = jax.jit(lambda k, s, a: env.step_env(k, s, a, params))
    o_step = jax.jit(ours.step)
    g_reset = jax.jit(lambda k: env.reset_env(k, params))
    actions = np.random.default_rng(seed).integers(0, 5, steps)
    rewarded = ends = 0
    for t, action in enumerate(actions):
        key = jax.random.PRNGKey(t)
        g_obs, g_state, g_reward, g_done, _ = g_step(key, g_state, jnp.int32(action))
        o_state, out = o_step(key, o_state, jnp.int32(action))
        np.testing.assert_array_equal(np.asarray(g_obs), np.asarray(out.final_obs), err_msg=f"{name} step {t}")
        assert float(g_reward) == float(out.reward), (name, t)
        assert bool(g_done) == bool(out.terminated | out.truncated), (name, t)
        rewarded, ends = rewarded + int(float(g_reward) != 0), ends + int(bool(g_done))
        if bool(g_done):
            g_obs, g_state = g_reset(key)
            np.testing.assert_array_equal(np.asarray(g_obs), np.asarray(out.obs), err_msg=f"{name} reset {t}")
    return rewarded, ends


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groove")
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args(argv)
    groove = load(args.groove)
    for i, name in enumerate([n for n, m in G.MODES.items() if m.tabular]):
        rewarded, ends = compare(groove, name, args.steps, i)
        print(f"{name}: {args.steps} steps equal (observations, rewards, episode ends); {rewarded} rewarded, "
              f"{ends} episode ends")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
