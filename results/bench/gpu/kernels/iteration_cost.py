"""What a sequential loop iteration costs on this device, program by program (issue 45, item 4).

`metadisco.parallel.cost` estimates a trainer's time on a GPU as max(FLOPs / peak, bytes / bandwidth, loop
iterations x seconds per iteration). An earlier call measured 24-28 us per iteration for CartPole on one H200 and
46-74 us for SpaceInvaders-MinAtar, so one figure per GPU is 2x off for MinAtar. This script gathers what a better
model needs: for PPO trainers of several envs, seed counts and objectives (a population's rows carry their own
meta-parameters), the compiled program's seconds per call (median of 3 after one warm call) and its optimised HLO
text (the kernels each loop body launches), written under --out as `iteration_cost.json` and `hlo.tar.gz`. The
loop iterations themselves come from the jaxpr (`metadisco.parallel.cost.program_cost`), which does not depend
on the device: `results/bench/gpu/kernels/iteration_model.py` counts them on the CPU and fits the model.

    python results/bench/gpu/kernels/iteration_cost.py --out DIR [--only NAME,...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

from metadisco.objectives import BUILTIN_OBJECTIVES, DRIFTS, Objective
from metadisco.parallel import sharding
from metadisco.runs.seeds import resolve_config, runs_program, seed_keys
from metadisco.trainers.hyper import hyper_of, static_of

# (name, env, timesteps per run, objective, rows, rows carry their own meta-parameters)
PROGRAMS = (
    ("cartpole_ppo_1", "CartPole-v1", 131_072, "ppo", 1, False),
    ("cartpole_ppo_16", "CartPole-v1", 131_072, "ppo", 16, False),
    ("cartpole_lpo_pop64", "CartPole-v1", 65_536, "lpo", 64, True),
    ("spaceinvaders_ppo_1", "SpaceInvaders-MinAtar", 262_144, "ppo", 1, False),
    ("spaceinvaders_ppo_16", "SpaceInvaders-MinAtar", 262_144, "ppo", 16, False),
    ("breakout_ppo_1", "Breakout-MinAtar", 262_144, "ppo", 1, False),
    ("breakout_talpo_pop18", "Breakout-MinAtar", 156_250, "talpo", 18, True),
    ("seaquest_ppo_1", "Seaquest-MinAtar", 262_144, "ppo", 1, False),
    ("freeway_ppo_4", "Freeway-MinAtar", 262_144, "ppo", 4, False),
)


OBJECTIVES = {
    "ppo": lambda: BUILTIN_OBJECTIVES["ppo"],
    "lpo": lambda: Objective(drift=DRIFTS.make("lpo")),
    "talpo": lambda: Objective(drift=DRIFTS.make("talpo", hidden=16, horizon=False)),  # short_long_minatar's
}


def build(env_id: str, timesteps: int, objective_name: str, rows: int, per_row_meta: bool, devices):
    """(jitted program, its arguments, the config) of `rows` PPO-style runs on one device."""
    config = resolve_config(env_id, timesteps=timesteps)
    objective = OBJECTIVES[objective_name]()
    meta = objective.zero_meta()
    in_axes = (0, None, None)
    if per_row_meta and jax.tree.leaves(meta):
        # A population: each row its own small random meta-parameters, as an ES generation samples them.
        leaves, treedef = jax.tree.flatten(meta)
        keys = jax.random.split(jax.random.PRNGKey(7), len(leaves))
        meta = jax.tree.unflatten(treedef, [x + 0.01 * jax.random.normal(k, (rows, *x.shape))
                                            for k, x in zip(keys, leaves, strict=True)])
        in_axes = (0, 0, None)
    keys = np.asarray(seed_keys(rows))
    args = sharding.place((keys, meta, hyper_of(config)), devices, in_axes)
    fn = runs_program(static_of(config.validate()), env_id, objective, tuple(devices), in_axes)
    return fn, args, config


def measure(name, env_id, timesteps, objective_name, rows, per_row_meta, devices, hlo_dir: Path) -> dict:
    fn, args, config = build(env_id, timesteps, objective_name, rows, per_row_meta, devices)
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_s = time.perf_counter() - start
    (hlo_dir / f"{name}.hlo.txt").write_text(compiled.as_text())
    jax.block_until_ready(compiled(*args))  # warm: first-call allocations
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        seconds.append(time.perf_counter() - start)
    steps = config.num_updates * config.batch_size
    return {"name": name, "env": env_id, "timesteps_per_run": steps, "objective": objective_name, "rows": rows,
            "per_row_meta": per_row_meta, "num_envs": config.num_envs, "num_steps": config.num_steps,
            "num_updates": config.num_updates, "compile_seconds": compile_s, "seconds": seconds,
            "median_seconds": statistics.median(seconds),
            "env_steps_per_second": rows * steps / statistics.median(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", default="", help="comma-separated program names (default: all)")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    args.out.mkdir(parents=True, exist_ok=True)
    devices = jax.local_devices()[:1]
    hlo_dir = Path(tempfile.mkdtemp(prefix="hlo-"))
    results = {"device": str(devices[0]), "device_kind": devices[0].device_kind, "jax": jax.__version__,
               "programs": []}
    for spec in PROGRAMS:
        if only and spec[0] not in only:
            continue
        figure = measure(*spec, devices, hlo_dir)
        results["programs"].append(figure)
        print(f"{figure['name']:24s} compile {figure['compile_seconds']:6.1f} s  call "
              f"{figure['median_seconds']:7.3f} s  {figure['env_steps_per_second']:12,.0f} steps/s", flush=True)
        # Written after every program, so a call cut off by its time limit keeps what it measured.
        (args.out / "iteration_cost.json").write_text(json.dumps(results, indent=1))
        with tarfile.open(args.out / "hlo.tar.gz", "w:gz") as tar:
            tar.add(hlo_dir, arcname="hlo")


if __name__ == "__main__":
    main()
