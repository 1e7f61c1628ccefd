import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.envs import VecEnv, check_env_id, env_ids, make_env
from metadisco.envs.wrappers import LogEpisodes, NormalizeObservation, init_moments, update_moments


def test_registry_covers_gymnax_and_brax():
    ids = env_ids()
    for env_id in ("CartPole-v1", "Pendulum-v1", "SpaceInvaders-MinAtar", "Catch-bsuite", "FourRooms-misc",
                   "brax/ant", "brax/reacher"):
        assert env_id in ids


@pytest.mark.parametrize("bad, suggestion", [("CartPole-v2", "CartPole-v1"), ("brax/antt", "brax/ant"),
                                             ("SpaceInvaders-Minatar", "SpaceInvaders-MinAtar")])
def test_unknown_env_names_the_closest_ids(bad, suggestion):
    with pytest.raises(UserError, match=f"unknown env '{bad}'.*{suggestion}"):
        check_env_id(bad)


def test_specs():
    cartpole = make_env("CartPole-v1").spec
    assert cartpole.obs_shape == (4,) and cartpole.discrete and cartpole.action_size == 2
    pendulum = make_env("Pendulum-v1").spec
    assert not pendulum.discrete and pendulum.action_size == 1
    assert pendulum.action_low == (-2.0,) and pendulum.action_high == (2.0,)
    minatar = make_env("SpaceInvaders-MinAtar").spec
    assert minatar.obs_shape == (600,)  # 10 x 10 x 6 grid, flattened for MLPs


def _run(env_id, num_envs, steps, action_fn, seed=0):
    vec = LogEpisodes(VecEnv(make_env(env_id), num_envs))

    @jax.jit
    def run(key):
        obs, state = vec.reset(key)

        def step(carry, key):
            state, obs = carry
            k1, k2 = jax.random.split(key)
            state, out = vec.step(jax.random.split(k1, num_envs), state, action_fn(k2, num_envs))
            return (state, out.obs), (obs, out)

        _, (obs_before, outs) = jax.lax.scan(step, (state, obs), jax.random.split(key, steps))
        return obs_before, outs

    return run(jax.random.PRNGKey(seed))


def test_pendulum_truncates_and_never_terminates():
    obs_before, out = _run("Pendulum-v1", 2, 450, lambda k, n: jax.random.uniform(k, (n, 1), minval=-2, maxval=2))
    truncated = np.asarray(out.truncated)
    assert not np.asarray(out.terminated).any()
    # 200-step time limit: truncation at steps 199 and 399 of each env, nowhere else.
    assert np.array_equal(np.nonzero(truncated[:, 0])[0], [199, 399])
    # At truncation the next observation is a fresh episode's; the final observation is where it ended.
    assert not np.allclose(out.obs[199], out.final_obs[199])
    # Elsewhere the final observation is the next one.
    np.testing.assert_allclose(out.final_obs[:199], obs_before[1:200], atol=1e-5)
    # Logged return at the end equals the sum of that episode's rewards.
    np.testing.assert_allclose(out.info["episode_return"][399], out.reward[200:400].sum(0), rtol=1e-4)
    np.testing.assert_array_equal(out.info["episode_length"][199], [200, 200])


def test_cartpole_terminates_with_random_actions():
    _, out = _run("CartPole-v1", 4, 300, lambda k, n: jax.random.randint(k, (n,), 0, 2))
    term, trunc = np.asarray(out.terminated), np.asarray(out.truncated)
    assert term.sum() >= 4 and not trunc.any() and not (term & trunc).any()
    done_returns = np.asarray(out.info["episode_return"])[term]
    lengths = np.asarray(out.info["episode_length"])[term]
    np.testing.assert_allclose(done_returns, lengths)  # reward 1 per step


def test_running_moments_match_numpy_for_random_batches():
    rng = np.random.default_rng(0)
    for trial in range(25):
        dim = rng.integers(1, 5)
        batches = [rng.normal(rng.normal(), rng.uniform(0.1, 5), size=(rng.integers(1, 9), dim))
                   for _ in range(rng.integers(1, 8))]
        moments = init_moments((dim,))
        for b in batches:
            moments = update_moments(moments, jnp.asarray(b, jnp.float32))
        data = np.concatenate(batches)
        n = len(data)
        # The statistics start from a pseudo-batch of count 1e-4 with mean 0 and variance 1.
        prior = 1e-4
        mean = data.mean(0) * n / (n + prior)
        var = (prior + n * data.var(0) + data.mean(0) ** 2 * prior * n / (n + prior)) / (n + prior)
        np.testing.assert_allclose(moments.mean, mean, rtol=1e-4, atol=1e-5, err_msg=f"trial {trial}")
        np.testing.assert_allclose(moments.var, var, rtol=1e-4, atol=1e-5, err_msg=f"trial {trial}")
        assert moments.count == pytest.approx(n + prior)


def test_normalized_final_obs_uses_the_same_statistics():
    vec = NormalizeObservation(LogEpisodes(VecEnv(make_env("CartPole-v1"), 3)))
    obs, state = vec.reset(jax.random.PRNGKey(0))
    assert obs.shape == (3, 4)
    state, out = vec.step(jax.random.split(jax.random.PRNGKey(1), 3), state, jnp.array([0, 1, 0]))
    not_done = ~np.asarray(out.terminated | out.truncated)
    np.testing.assert_allclose(np.asarray(out.obs)[not_done], np.asarray(out.final_obs)[not_done], rtol=1e-6)
    assert state.moments.count == pytest.approx(6 + 1e-4)


@pytest.mark.slow
def test_brax_truncation_is_kept_apart_from_termination():
    """brax adapter: our own step counter truncates; the final observation is kept for bootstrapping."""
    from metadisco.envs.brax_adapter import BraxEnv

    env = BraxEnv("brax/fast", "fast", episode_length=5)
    vec = VecEnv(env, 2)
    obs, state = jax.jit(vec.reset)(jax.random.PRNGKey(0))
    step = jax.jit(vec.step)
    truncs = []
    for t in range(11):
        state, out = step(jax.random.split(jax.random.PRNGKey(t), 2), state, jnp.ones((2, env.spec.action_size)))
        truncs.append(np.asarray(out.truncated))
        assert not np.asarray(out.terminated).any()
        if t == 4:
            np.testing.assert_allclose(out.obs, obs)  # restarted from the first state
            assert not np.allclose(out.final_obs, obs)
    assert [t for t, tr in enumerate(truncs) if tr.all()] == [4, 9]


@pytest.mark.slow
def test_brax_trains_end_to_end_with_a_shrunk_preset():
    """A few updates of the brax preset (normalisation on) on CPU: finite losses, truncations counted."""

    from metadisco.envs.registry import make_env as make
    from metadisco.objectives import BUILTIN_OBJECTIVES
    from metadisco.trainers import make_train
    from metadisco.trainers.config import get_preset

    config = get_preset("brax").with_settings(dict(num_envs=8, num_steps=10, total_timesteps=8 * 10 * 4,
                                                   num_minibatches=2, hidden_sizes=(16, 16)))
    env = make("brax/fast", episode_length=10)
    ppo = BUILTIN_OBJECTIVES["ppo"]
    m = jax.jit(make_train(config, env, ppo))(jax.random.PRNGKey(0), ppo.zero_meta()).metrics
    for loss in (m.losses["actor_loss"], m.losses["value_loss"], m.losses["entropy"]):
        assert np.isfinite(np.asarray(loss)).all()
    # Every env is cut by the 10-step limit once per update: 8 truncations an update, none terminal.
    np.testing.assert_array_equal(m.truncation_count, [8, 8, 8, 8])
    np.testing.assert_array_equal(m.episode_count, [8, 8, 8, 8])
