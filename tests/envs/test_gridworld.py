"""LPG's gridworlds (`metadisco.envs.gridworld`), for many random action sequences in every mode: the agent never
stands on a wall; observations are one-hot as the mode says; a reward comes only from an object that existed where
the agent stepped; episodes end at the time limit as truncations and otherwise only on a collection that can end
them; levels are fixed, distinct free cells. PPO learns `dense` (slow)."""

import jax
import numpy as np
import pytest

from metadisco.envs import env_ids, make_env
from metadisco.envs.gridworld import MODES, PREFIX, level_of


@pytest.mark.parametrize("name", sorted(MODES))
def test_levels_are_fixed_and_free(name):
    mode = MODES[name]
    start, homes = level_of(name)
    assert level_of(name) == (start, homes) and len(homes) == len(mode.obj_kinds)
    cells = (start, *homes)
    assert len(set(cells)) == len(cells) and not set(cells) & set(mode.walls)
    assert all(0 <= c < mode.grid_size**2 for c in cells) and PREFIX + name in env_ids()


@pytest.mark.parametrize("name", sorted(MODES))
def test_random_play_keeps_the_rules(name):
    env, mode = make_env(PREFIX + name), MODES[name]
    cells = mode.grid_size**2
    obs, state = env.reset(jax.random.PRNGKey(0))
    steps = min(mode.max_steps + 20, 600)
    actions = jax.random.randint(jax.random.PRNGKey(1), (steps,), 0, 5)

    def step(carry, xs):
        state, obs = carry
        key, action = xs
        new, out = env.step(key, state, action)
        return (new, out.obs), (state, out)

    keys = jax.random.split(jax.random.PRNGKey(2), steps)
    _, (before, outs) = jax.jit(lambda s, o: jax.lax.scan(step, (s, o), (keys, actions)))(state, obs)
    walls = np.zeros(cells, bool)
    walls[list(mode.walls)] = True
    final = np.asarray(outs.final_obs)
    grid = final[:, :-1]
    if mode.tabular:
        assert np.all(grid.sum(axis=1) == 1)
        pos = np.argmax(grid, axis=1) % cells
    else:
        assert np.all(grid[:, :cells].sum(axis=1) == 1)
        pos = np.argmax(grid[:, :cells], axis=1)
    assert not walls[pos].any()
    reward, term, trunc = (np.asarray(x) for x in (outs.reward, outs.terminated, outs.truncated))
    had = np.asarray(before.exists) & (np.asarray(before.obj_pos) == pos[:, None])  # an object where it stepped
    assert np.all((reward != 0) <= had.any(axis=1))
    can_end = (had * np.asarray([mode.p_terminate[k] for k in mode.obj_kinds]) > 0).any(axis=1)
    assert np.all(term <= can_end) and not np.any(term & trunc)
    times = np.asarray(before.time) + 1
    np.testing.assert_array_equal(trunc, ~term & (times >= mode.max_steps))
    assert np.all(times <= mode.max_steps)
    np.testing.assert_allclose(final[:, -1], times * 0.001, rtol=1e-6)


@pytest.mark.heavy
@pytest.mark.slow  # about 30 s here
def test_ppo_learns_dense():
    """PPO (PureJaxRL's classic settings, 16 envs x 32 steps) on `gridworld/dense` from random play (about 5 a
    500-step episode) to above 20 by 200k steps, on each of 2 seeds; measured 39."""
    from metadisco.objectives import BUILTIN_OBJECTIVES
    from metadisco.runs.seeds import resolve_config, train_seeds

    config = resolve_config("gridworld/dense", None, {"num_envs": 16, "num_steps": 32}, 200_000)
    ppo = BUILTIN_OBJECTIVES["ppo"]
    result = train_seeds("gridworld/dense", ppo, ppo.zero_meta(), config, 2, 0)
    assert np.all(np.asarray(result.final_return) > 20), result.final_return
