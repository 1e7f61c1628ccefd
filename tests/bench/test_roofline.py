"""The roofline figures of `metadisco bench`: the hand count of the actor-critic MLP agrees with XLA's count of
its forward pass, the whole program's count per env step covers the MLP's work, and the peak is a real
measurement; the network-only program does the trainer's network work and nothing else."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny_train import TINY

from metadisco.bench.roofline import (
    flops_per_env_step,
    network_backward_flops,
    network_forward_flops,
    network_only_fn,
    network_only_program,
    peak_flops,
    roofline,
)
from metadisco.parallel.cost import program_cost
from metadisco.trainers.networks import ActorCritic


@pytest.mark.parametrize("obs, actions, hidden", [(4, 2, (64, 64)), (400, 6, (64, 64)), (11, 3, (8, 8, 8))])
def test_hand_count_of_the_network_is_xlas(obs, actions, hidden):
    net = ActorCritic(actions, True, hidden)
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, obs)))
    batch = 32
    counted = program_cost(lambda x: jax.tree.leaves(net.apply(params, x)), jnp.ones((batch, obs)))
    # exact: XLA counts 2 x in x out per dense layer (bias adds fused into the products are not counted)
    assert counted.flops == pytest.approx(batch * network_forward_flops(obs, actions, hidden), rel=1e-6)


@pytest.mark.parametrize("obs, actions, hidden", [(4, 2, (64, 64)), (400, 6, (64, 64)), (11, 3, (8, 8, 8))])
def test_hand_count_of_the_backward_pass_is_xlas(obs, actions, hidden):
    net = ActorCritic(actions, True, hidden)
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, obs)))
    batch = 32

    def outputs(p, x, weights):  # weighted, as a loss is: XLA folds a plain sum's constant cotangent away
        policy, value = net.apply(p, x)
        return jnp.sum(weights[:, :-1] * policy.logits_or_mean) + jnp.sum(weights[:, -1:] * value)

    both = program_cost(lambda x, w: jax.grad(outputs)(params, x, w), jnp.ones((batch, obs)),
                        jnp.ones((batch, actions + 1))).flops
    # XLA also counts the activations' elementwise gradients: under 1% at 64 units wide, 7% at 8.
    hand = batch * (network_forward_flops(obs, actions, hidden) + network_backward_flops(obs, actions, hidden))
    assert hand <= both <= 1.1 * hand


@pytest.fixture(scope="module")
def tiny_figures():
    """`flops_per_env_step` of the tiny config (a trace of the whole trainer), shared by the tests below."""
    return flops_per_env_step("CartPole-v1", TINY)


@pytest.mark.heavy
@pytest.mark.slow  # 26 s on 2 cores
def test_the_program_count_per_env_step_covers_the_networks_work(tiny_figures):
    figures = tiny_figures
    hand = figures["mlp_hand_count_per_env_step"]
    # The MLP is most of the arithmetic; env, GAE, Adam and the loss add to it, never take from it.
    assert hand <= figures["flops_per_env_step"] <= 3 * hand
    assert figures["bytes_per_env_step"] > 0


def test_peak_is_measured_and_the_fraction_follows():
    peak = peak_flops(size=256, repeats=2)
    assert peak["flops_per_second"] > 1e8 and peak["devices"] == len(jax.devices())
    figure = roofline(1e5, 2e4, peak)
    assert figure["achieved_flops_per_second"] == 2e9
    assert figure["fraction_of_peak"] == pytest.approx(2e9 / peak["flops_per_second"])


def test_the_network_only_program_is_the_networks_passes_and_nothing_more(tiny_figures):
    longer = dataclasses.replace(TINY, total_timesteps=2 * TINY.total_timesteps)
    # Per env step of the updates alone: the difference of two lengths leaves out the network's initialisation.
    flops = [program_cost(network_only_fn("CartPole-v1", c), jax.random.PRNGKey(0)).flops for c in (TINY, longer)]
    per_step = (flops[1] - flops[0]) / (TINY.num_updates * TINY.batch_size)
    hand = tiny_figures["mlp_hand_count_per_env_step"]
    # A forward pass per env step and, per epoch, a forward and a backward pass, counted by hand; the program adds
    # only elementwise work (the activations' gradients, the gradient steps: about 12% at this tiny width of 8),
    # and leaves out the rollout's final-observation values (one forward pass of about 10).
    assert 0.85 * hand <= per_step <= 1.15 * hand


def test_the_network_only_program_runs_per_seed_like_the_trainer():
    devices = jax.devices()
    fn, args = network_only_program("CartPole-v1", TINY, 3, devices)
    out = np.asarray(fn(*args))
    assert out.shape[0] % len(devices) == 0 and np.all(np.isfinite(out))
    assert len(np.unique(out[:3])) == 3  # each seed its own network and inputs
