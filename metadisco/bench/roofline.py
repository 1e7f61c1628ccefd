"""How close to the hardware a benchmark figure is: FLOPs per env step, the FLOP/s achieved, and the fraction of
this machine's peak, measured in the same run.

- FLOPs per env step: XLA's cost model of one agent's whole training program with every loop counted as many
  times as it runs (`metadisco.parallel.cost.program_cost`: XLA alone counts a loop body once, about 57 FLOPs
  per CartPole step), divided by its env steps. Seeds and members are vmapped copies of the same program, so
  the figure holds for 1 seed, 16 seeds and a population alike.
- The hand count beside it: the actor-critic MLP alone, one forward pass per env step in the rollout and, per
  epoch, a forward and a backward pass (about twice the forward) per sample: (1 + 3 x epochs) x forward. The
  rest of the program (env, GAE, Adam, the loss's elementwise work) is what the model counts beyond it.
- Peak: the best FLOP/s of a large float32 matrix product on every device at once (one per core on a CPU),
  what XLA's own kernels reach on this machine; a small RL trainer's kernels (64-wide matmuls, a few envs) are
  far from that shape, so the fraction says how much of the machine the program's arithmetic uses, not how
  well it is written.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from metadisco.envs import make_env
from metadisco.objectives import Objective
from metadisco.parallel import sharding
from metadisco.parallel.cost import program_cost
from metadisco.runs.seeds import seed_keys
from metadisco.trainers import make_train
from metadisco.trainers.config import TrainConfig


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
    if config.algorithm == "ppo":
        forward = network_forward_flops(obs_size, spec.action_size, tuple(config.hidden_sizes))
        out["mlp_hand_count_per_env_step"] = (1 + 3 * config.update_epochs) * forward
        out["model_over_hand_count"] = out["flops_per_env_step"] / out["mlp_hand_count_per_env_step"]
    return out


def roofline(flops_per_step: float, steps_per_second: float, peak: dict) -> dict:
    """Achieved FLOP/s of a figure and its fraction of the measured peak."""
    achieved = flops_per_step * steps_per_second
    return {"achieved_flops_per_second": achieved, "fraction_of_peak": achieved / peak["flops_per_second"]}

