"""How close to the hardware a benchmark figure is: FLOPs per env step, the FLOP/s achieved, and the fraction of
this machine's peak, measured in the same run.

- FLOPs per env step: XLA's cost model of one agent's whole training program with every loop counted as many
  times as it runs (`metadisco.parallel.cost.program_cost`: XLA alone counts a loop body once, about 57 FLOPs
  per CartPole step), divided by its env steps. Seeds and members are vmapped copies of the same program, so
  the figure holds for 1 seed, 16 seeds and a population alike.
- The hand count beside it: the actor-critic MLP alone, one forward pass per env step in the rollout and, per
  epoch, a forward and a backward pass per sample: forward + epochs x (forward + backward). The backward pass is
  twice the forward but for the first layers, which need no gradient for the observations: on MinAtar's 400-600
  inputs those are 90% of the network, so its backward pass is about 1.1 forwards, not 2. The rest of the program
  (env, GAE, Adam, the loss's elementwise work) is what the model counts beyond it.
- Peak: the best FLOP/s of a large float32 matrix product on every device at once (one per core on a CPU),
  what XLA's own kernels reach on this machine; a small RL trainer's kernels (64-wide matmuls, a few envs) are
  far from that shape, so the fraction says how much of the machine the program's arithmetic uses, not how
  well it is written.
- The network alone (`network_only_fn`): a program that makes the actor-critic's passes of the same training run
  and nothing else (no env, sampling, GAE, loss terms, Adam or shuffling), at the same shapes, vmapped and sharded
  like the trainer. Its speed is what the trainer would reach if everything but its network were free, on this
  machine's kernels for these shapes: `trainer_over_network_only` (the trainer's seconds over the network's) is
  the most any change outside the network could gain.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.envs import make_env
from metadisco.objectives import Objective
from metadisco.parallel import sharding
from metadisco.parallel.cost import program_cost
from metadisco.runs.seeds import seed_keys
from metadisco.trainers import make_train
from metadisco.trainers.algorithm import get_algorithm
from metadisco.trainers.config import TrainConfig
from metadisco.trainers.networks import make_network


def peak_flops(size: int = 2048, repeats: int = 5, devices=None) -> dict:
    """The best FLOP/s over `repeats` of one [size, size] float32 matrix product per device, all devices at once
    (`shard_map`, as every benchmark program runs)."""
    devices = list(jax.devices() if devices is None else devices)
    n = len(devices)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, size, size), dtype=np.float32) for _ in range(2))
    fn = sharding.shard_runs(lambda x, y: x @ y, devices, (0, 0))
    args = sharding.place((a, b), devices, (0, 0))
    compiled = fn.lower(*args).compile()
    jax.block_until_ready(compiled(*args))  # warm
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        best = min(best, time.perf_counter() - start)
    flops = n * 2.0 * size**3
    return {"matmul": f"{n} x [{size}, {size}] @ [{size}, {size}] float32", "devices": n, "seconds": best,
            "flops_per_second": flops / best}


def network_forward_flops(obs_size: int, action_size: int, hidden: tuple[int, ...]) -> int:
    """FLOPs of one actor-critic forward pass for one observation, counted by hand: each dense layer of both
    towers is a multiply and an add per weight, 2 x in x out. Bias adds (one per output, about 1% of a 64-wide
    layer) are left out, as XLA's count leaves them out where it fuses them into the matrix product."""
    total = 0
    for head in (action_size, 1):
        sizes = (obs_size, *hidden, head)
        total += sum(2 * i * o for i, o in zip(sizes[:-1], sizes[1:], strict=True))
    return total


def network_backward_flops(obs_size: int, action_size: int, hidden: tuple[int, ...]) -> int:
    """FLOPs of one actor-critic backward pass (the parameters' gradients) for one observation, by hand: per
    dense layer 2 x in x out for its weights' gradient and as much for its input's, except the first layer of
    each tower, whose input is the observation."""
    first = sum(2 * obs_size * (hidden[0] if hidden else head) for head in (action_size, 1))
    return 2 * network_forward_flops(obs_size, action_size, hidden) - first


def flops_per_env_step(env_id: str, config: TrainConfig, objective: Objective | None = None) -> dict:
    """XLA's count of one agent's training program per env step, and the hand count of its MLP (module doc)."""
    objective = objective or Objective()
    env = make_env(env_id)
    train = make_train(config, env, objective)
    meta = objective.zero_meta()
    key = seed_keys(1)[0]
    counted = program_cost(lambda k: train(k, meta).metrics, key)
    steps = config.num_updates * config.batch_size
    out = {"flops_per_env_step": counted.flops / steps, "bytes_per_env_step": counted.bytes / steps,
           "transcendentals_per_env_step": counted.transcendentals / steps}
    spec = env.spec
    obs_size = int(np.prod(spec.obs_shape))
    passes = get_algorithm(config.algorithm).network_passes
    if passes is not None:
        sizes = (obs_size, spec.action_size, tuple(config.hidden_sizes))
        forwards, backwards = passes(config)
        out["mlp_hand_count_per_env_step"] = (forwards * network_forward_flops(*sizes)
                                              + backwards * network_backward_flops(*sizes))
        out["model_over_hand_count"] = out["flops_per_env_step"] / out["mlp_hand_count_per_env_step"]
    return out


def roofline(flops_per_step: float, steps_per_second: float, peak: dict) -> dict:
    """Achieved FLOP/s of a figure and its fraction of the measured peak."""
    achieved = flops_per_step * steps_per_second
    return {"achieved_flops_per_second": achieved, "fraction_of_peak": achieved / peak["flops_per_second"]}


def network_only_fn(env_id: str, config: TrainConfig):
    """key -> scalar: the actor-critic passes of one PPO training run of `config`, and nothing else.

    Per update: `num_steps` forward passes on `num_envs` observations, each step's input made from the previous
    step's outputs (a rollout's dependency chain, so XLA cannot hoist or batch them), then `update_epochs` x
    `num_minibatches` forward and backward passes on `minibatch_size` samples with a plain gradient step (the
    next pass needs the new parameters). Left out: the value of the rollout's final observations (one forward pass
    per env step, batched) and everything that is not the network. The minibatch is the rollout's last
    observations tiled to `minibatch_size` rows (the cost of a dense layer does not depend on its values): random
    minibatches drawn up front cost more than the passes themselves where observations are wide (MinAtar's 400-600
    inputs x 32 minibatches of 1,024 rows per seed).
    """
    env = make_env(env_id)
    network = make_network(env.spec, tuple(config.hidden_sizes), config.activation)
    obs_size = int(np.prod(env.spec.obs_shape))
    passes = config.options.update_epochs * config.options.num_minibatches
    minibatch_size = config.batch_size // config.options.num_minibatches

    def outputs_sum(params, obs):
        policy, value = network.apply(params, obs)
        return jnp.sum(policy.logits_or_mean, axis=-1) + value

    def run(key):
        params = network.init(key, jnp.zeros((1, obs_size), jnp.float32))
        obs = jax.random.normal(key, (config.num_envs, obs_size))
        tiles = -(-minibatch_size // config.num_envs)

        def update(carry, _):
            params, obs = carry

            def act(obs, _):
                return obs + 1e-3 * outputs_sum(params, obs)[:, None], None

            obs, _ = jax.lax.scan(act, obs, None, config.num_steps)
            x = jnp.tile(obs, (tiles, 1))[:minibatch_size]

            def minibatch(params, _):
                grads = jax.grad(lambda p: jnp.sum(outputs_sum(p, x)))(params)
                return jax.tree.map(lambda p, g: p - 1e-6 * g, params, grads), None

            params, _ = jax.lax.scan(minibatch, params, None, passes)
            return (params, obs), None

        (params, obs), _ = jax.lax.scan(update, (params, obs), None, config.num_updates)
        return jnp.sum(obs) + sum(jnp.sum(leaf) for leaf in jax.tree.leaves(params))

    return run


def network_only_program(env_id: str, config: TrainConfig, num_seeds: int, devices) -> tuple:
    """(jitted function, its arguments) of `network_only_fn` for `num_seeds` seeds, split over `devices` as the
    trainer's seeds are (`metadisco.runs.seeds.seeds_program`)."""
    fn = sharding.shard_runs(network_only_fn(env_id, config), devices, (0,))
    return fn, sharding.place((np.asarray(seed_keys(num_seeds)),), devices, (0,))
