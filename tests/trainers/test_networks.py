import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.envs import EnvSpec
from metadisco.rl.nn import orthogonal
from metadisco.trainers.networks import make_network


@pytest.mark.parametrize("shape", [(4, 64), (64, 64), (600, 64), (64, 2), (64, 1), (256, 256), (3, 5)])
def test_orthogonal_init_has_orthonormal_rows_or_columns(shape):
    for seed in range(5):
        w = np.asarray(orthogonal(2.0)(jax.random.PRNGKey(seed), shape), np.float64) / 2.0
        q = w if shape[0] >= shape[1] else w.T
        np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=1e-5)


@pytest.mark.slow  # 12 s on 2 cores
def test_vmapped_init_differs_per_seed_and_heads_have_the_right_shapes():
    net = make_network(EnvSpec("x", (6,), False, 3, (-1.0,) * 3, (1.0,) * 3), (16, 16), "tanh")
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    params = jax.jit(jax.vmap(lambda k: net.init(k, jnp.zeros((1, 6)))))(keys)
    kernels = params["params"]["actor_layers_0"]["kernel"]
    assert kernels.shape == (4, 6, 16) and not np.allclose(kernels[0], kernels[1])
    policy, value = net.apply(jax.tree.map(lambda x: x[0], params), jnp.ones((5, 6)))
    assert policy.logits_or_mean.shape == (5, 3) and value.shape == (5,)
    assert policy.sample(jax.random.PRNGKey(1)).shape == (5, 3)


def _unrolled_orthogonal(scale: float = 1.0, iterations: int = 40):
    """The initialiser as it was before it became a fori_loop (a Python loop, unrolled into the program)."""
    import math

    def init(key, shape, dtype=jnp.float32):
        rows, cols = math.prod(shape[:-1]), shape[-1]
        tall = rows >= cols
        a = jax.random.normal(key, (rows, cols) if tall else (cols, rows), jnp.float32)
        x = a / jnp.linalg.norm(a)
        for _ in range(iterations):
            x = 1.5 * x - 0.5 * x @ (x.T @ x)
        q = x if tall else x.T
        return (scale * q).reshape(shape).astype(dtype)

    return init


@pytest.mark.heavy
@pytest.mark.slow  # 38 s on 2 cores
def test_looped_orthogonal_init_trains_bit_identically_to_the_unrolled_one(monkeypatch):
    """The fori_loop (a compile-time fix) changes no number: whole training runs, vmapped over seeds, match."""
    from metadisco.envs import make_env
    from metadisco.objectives import BUILTIN_OBJECTIVES
    from metadisco.trainers import make_train, networks
    from metadisco.trainers.config import train_config

    config = train_config(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 4, update_epochs=2, num_minibatches=2,
                         hidden_sizes=(16, 16))
    ppo = BUILTIN_OBJECTIVES["ppo"]
    keys = jax.random.split(jax.random.PRNGKey(7), 2)

    def run():
        train = make_train(config, make_env("CartPole-v1"), ppo)
        return jax.jit(jax.vmap(lambda k: train(k, ppo.zero_meta())))(keys)

    looped = run()
    monkeypatch.setattr(networks, "orthogonal", _unrolled_orthogonal)
    unrolled = run()
    for a, b in zip(jax.tree.leaves(looped), jax.tree.leaves(unrolled), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
