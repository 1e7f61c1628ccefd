"""Plan an evaluation before it starts (`metadisco evaluate ... --dry-run`): compile each env's calls (one per
group of methods that share a trainer, `runner.group_methods`) and report env steps, FLOPs, bytes and memory per
device from XLA (`metadisco.parallel.cost`, loops counted), and a roofline estimate on an accelerator. Nothing is
trained or written; unlike meta-train's dry run no call is timed here, since one call is the evaluation itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from metadisco.parallel import cost
from metadisco.parallel.cost import format_seconds as _seconds
from metadisco.parallel.cost import format_si as _si


@dataclass(frozen=True)
class CallPlan:
    env: str
    methods: list[str]
    runs: int  # methods x seeds (before padding to the device count)
    env_steps: int
    cost: cost.Cost  # every device
    memory: cost.Memory  # per device
    compile_seconds: float


def plan_evaluation(methods, envs: list[str], configs: dict, num_seeds: int, seed: int = 0, devices=None
                    ) -> list[CallPlan]:
    """One `CallPlan` per env and group of methods, in the order `evaluate` makes the calls."""
    import jax

    from metadisco.envs import make_env
    from metadisco.evaluate.runner import group_methods, group_program
    from metadisco.runs.seeds import seed_keys

    devices = tuple(jax.local_devices() if devices is None else devices)
    keys = seed_keys(num_seeds, seed)
    out = []
    for env_id in envs:
        env, config = make_env(env_id), configs[env_id]
        for group in group_methods(methods):
            fn, args = group_program(env, group, config, keys, devices)
            start = time.perf_counter()
            compiled = fn.lower(*args).compile()
            seconds = time.perf_counter() - start
            used = len(jax.tree.leaves(args[0])[0].sharding.device_set)
            per_device = cost.jaxpr_cost(jax.make_jaxpr(fn)(*args), compiled)
            runs = len(group) * num_seeds
            out.append(CallPlan(env_id, [m.label for m in group], runs, runs * config.num_updates * config.batch_size,
                                per_device * used, cost.memory(compiled), seconds))
    return out


def render(calls: list[CallPlan], acc: cost.Accelerator, devices: int) -> list[str]:
    """The dry run's report, one line each."""
    lines = [f"{'env':28s} {'methods':24s} {'runs':>5s} {'env steps':>13s} {'FLOPs':>12s} {'bytes':>12s} "
             f"{'memory/device':>13s} {'compile':>8s}"]
    for c in calls:
        lines.append(f"{c.env:28s} {','.join(c.methods)[:24]:24s} {c.runs:>5d} {c.env_steps:>13,} "
                     f"{_si(c.cost.flops, 'FLOP'):>12s} {_si(c.cost.bytes, 'B'):>12s} "
                     f"{_si(c.memory.total, 'B'):>13s} {_seconds(c.compile_seconds):>8s}")
    total = sum((c.cost for c in calls), cost.Cost())
    steps = sum(c.env_steps for c in calls)
    memory = max(c.memory.total for c in calls)
    lines.append(f"whole evaluation: {steps:,} env steps, {_si(total.flops, 'FLOP')}, {_si(total.bytes, 'B')} "
                 f"accessed (the random-policy reference not included); time here not measured (a call is the "
                 f"evaluation itself)")
    lines.append(f"memory per device: {_si(memory, 'B')} (XLA's memory analysis of the largest call) on each of "
                 f"{devices} device(s)")
    needed = memory * devices
    fits = "fits" if needed <= acc.memory else "does NOT fit"
    lines.append(f"ESTIMATE for one {acc.describe()}, not a measurement: {_seconds(cost.roofline_seconds(total, acc))} "
                 f"in total (roofline max(FLOPs / peak, bytes / bandwidth): a lower bound); the largest call needs "
                 f"about {_si(needed, 'B')}, which {fits} in {_si(acc.memory, 'B')}")
    return lines
