"""Plan an evaluation before it starts (`metadisco evaluate ... --dry-run`): compile each env's calls (one per
group of methods that share a trainer, `runner.group_methods`) and report env steps, FLOPs, bytes and memory per
device from XLA (`metadisco.parallel.cost`, loops counted), and a roofline estimate on an accelerator. Nothing is
trained or written; unlike meta-train's dry run no call is timed here, since one call is the evaluation itself.
"""

from __future__ import annotations

from metadisco.parallel import cost
from metadisco.parallel.cost import CallPlan


def plan_evaluation(methods, envs: list[str], configs: dict, num_seeds: int, seed: int = 0, devices=None,
                    rules=None) -> list[CallPlan]:
    """One `CallPlan` per env and group of methods, in the order `evaluate` makes the calls. With a tuning grid
    (`rules`) each group's program is made once per grid point and seed set too (the learning rate is traced: the
    same program): at most 1 + 2 x points calls with `fresh_seeds` (the scoring call at a chosen point may be the
    untuned one), 1 + points with `same_seeds`."""
    import jax

    from metadisco.envs import make_env
    from metadisco.evaluate import env_of
    from metadisco.evaluate.runner import group_methods, group_program
    from metadisco.runs.seeds import seed_keys

    devices = tuple(jax.local_devices() if devices is None else devices)
    keys = seed_keys(num_seeds, seed)
    points = len(rules.grid()) if rules is not None else 0
    calls = 1 + points * (2 if rules is not None and rules.tune_rule == "fresh_seeds" else 1)
    out = []
    for env_id in envs:
        env = make_env(env_of(env_id))
        for group in group_methods(methods):
            config = configs[env_id][group[0].objective.algorithm]
            fn, args = group_program(env, group, config, keys, devices)
            runs = len(group) * num_seeds
            out.append(cost.plan_call(f"{env_id}: {','.join(m.label for m in group)}", fn, args, runs,
                                      runs * config.num_updates * config.batch_size, calls))
    return out


def render(calls: list[CallPlan], acc: cost.Accelerator, devices: int) -> list[str]:
    """The dry run's report, one line each."""
    return cost.render_plan(calls, acc, devices, "whole evaluation",
                            "the random-policy reference not included; time here not measured: a call is the "
                            "evaluation itself")
