"""metadisco's Seaquest (`metadisco.envs.seaquest`: gymnax's own step traced with 40-row entity buffers) equals
gymnax's step by step, bit for bit, and no buffer outgrows the proven bound, on random play and on play forced
into the fastest ramping the game allows."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments.minatar.seaquest import MinSeaquest

from metadisco.envs.registry import make_env
from metadisco.envs.seaquest import CAPACITY, MOST_ENTITIES, BoundedSeaquest, bounded

COUNTS = ("f_bullet_count", "e_bullet_count", "e_fish_count", "e_subs_count", "divers_count")
ENVS, STEPS = 64, 1000


def _play(forced: bool, key):
    """Both envs from the same keys and actions: the (obs, reward, done) mismatches and the largest count of each
    of gymnax's buffers. `forced` steps without resets, surfaces every other step and
    holds oxygen and divers up, so the game ramps to its fastest spawning and moving and stays there."""
    full = MinSeaquest()
    params = full.default_params
    small = bounded(full, params)
    step = (lambda env: env.step_env) if forced else (lambda env: env.step)

    def body(carry, inputs):
        states, mismatches, largest = carry
        key, t = inputs
        keys = jax.random.split(key, ENVS + 1)
        actions = jax.random.randint(keys[0], (ENVS,), 0, 6)
        outs = [jax.vmap(step(env), in_axes=(0, 0, 0, None))(keys[1:], s, actions, params)
                for env, s in zip((full, small), states, strict=True)]
        (obs_a, state_a, rew_a, done_a), (obs_b, state_b, rew_b, done_b) = (o[:4] for o in outs)
        mismatches = mismatches + jnp.stack([jnp.sum(obs_a != obs_b), jnp.sum(rew_a != rew_b),
                                             jnp.sum(done_a != done_b)])
        largest = jnp.maximum(largest, jnp.stack([jnp.max(getattr(state_a, c)) for c in COUNTS]))
        if forced:
            def hold(s):
                return s.replace(sub_y=jnp.where(t % 2 == 0, 0, jnp.maximum(s.sub_y, 1)),
                                 oxygen=jnp.full_like(s.oxygen, params.max_oxygen),
                                 diver_count=jnp.full_like(s.diver_count, 3))
            state_a, state_b = hold(state_a), hold(state_b)
        return ((state_a, state_b), mismatches, largest), None

    reset_keys = jax.random.split(jax.random.PRNGKey(0), ENVS)
    states = tuple(jax.vmap(env.reset_env, in_axes=(0, None))(reset_keys, params)[1] for env in (full, small))
    carry = (states, jnp.zeros(3, jnp.int32), jnp.zeros(len(COUNTS), jnp.int32))
    (_, mismatches, largest), _ = jax.lax.scan(body, carry, (jax.random.split(key, STEPS), jnp.arange(STEPS)))
    return mismatches, largest


@pytest.fixture(scope="module")
def plays():
    run = jax.jit(lambda key: (_play(False, key), _play(True, key)))
    return jax.tree.map(np.asarray, run(jax.random.PRNGKey(7)))


@pytest.mark.heavy
@pytest.mark.slow  # 68 s on 2 cores
def test_random_play_is_gymnax_bit_for_bit(plays):
    (mismatches, largest), _ = plays
    assert mismatches.tolist() == [0, 0, 0], "observations, rewards, dones differ from gymnax's"
    assert np.all(largest <= MOST_ENTITIES) and largest.max() >= 2, dict(zip(COUNTS, largest.tolist(), strict=True))


@pytest.mark.slow  # 47-56 s on 2 cores (the shared plays)
def test_fastest_ramping_is_gymnax_bit_for_bit_and_stays_under_the_bound(plays):
    _, (mismatches, largest) = plays
    assert mismatches.tolist() == [0, 0, 0], "observations, rewards, dones differ from gymnax's"
    # the forced play reaches far more entities than random play (21 fish when written), within the proof's bound
    assert np.all(largest <= MOST_ENTITIES) and largest.max() >= 12, dict(zip(COUNTS, largest.tolist(), strict=True))


def test_the_bounded_env_is_built_only_for_gymnax_seaquest_at_its_default_params():
    env, params = gymnax.make("Seaquest-MinAtar")
    assert isinstance(bounded(env, params), BoundedSeaquest)
    assert bounded(env, params.replace(shot_cool_down=1)) is env  # the proof does not cover other params
    other, other_params = gymnax.make("Breakout-MinAtar")
    assert bounded(other, other_params) is other
    assert isinstance(make_env("Seaquest-MinAtar").env, BoundedSeaquest)
    _, state = BoundedSeaquest().reset_env(jax.random.PRNGKey(0), params)
    assert state.e_subs.shape == (CAPACITY, 5) and state.f_bullets.shape == (CAPACITY, 3)
    _, state = env.reset_env(jax.random.PRNGKey(0), params)  # gymnax's own env keeps its 100 rows
    assert state.e_subs.shape == (100, 5)
