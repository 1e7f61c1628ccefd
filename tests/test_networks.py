import jax
import jax.numpy as jnp
import numpy as np
import pytest

from metadisco.envs import EnvSpec
from metadisco.networks import make_network, orthogonal


@pytest.mark.parametrize("shape", [(4, 64), (64, 64), (600, 64), (64, 2), (64, 1), (256, 256), (3, 5)])
def test_orthogonal_init_has_orthonormal_rows_or_columns(shape):
    for seed in range(5):
        w = np.asarray(orthogonal(2.0)(jax.random.PRNGKey(seed), shape), np.float64) / 2.0
        q = w if shape[0] >= shape[1] else w.T
        np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=1e-5)


def test_vmapped_init_differs_per_seed_and_heads_have_the_right_shapes():
    net = make_network(EnvSpec("x", (6,), False, 3, (-1.0,) * 3, (1.0,) * 3), (16, 16), "tanh")
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    params = jax.jit(jax.vmap(lambda k: net.init(k, jnp.zeros((1, 6)))))(keys)
    kernels = params["params"]["actor_layers_0"]["kernel"]
    assert kernels.shape == (4, 6, 16) and not np.allclose(kernels[0], kernels[1])
    policy, value = net.apply(jax.tree.map(lambda x: x[0], params), jnp.ones((5, 6)))
    assert policy.logits_or_mean.shape == (5, 3) and value.shape == (5,)
    assert policy.sample(jax.random.PRNGKey(1)).shape == (5, 3)
