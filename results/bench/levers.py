"""Issue 31, item 2: the known speed levers, tried on the trainer's CartPole programs (1 seed, 16 seeds).

    python results/bench/levers.py --out results/bench/levers_cpu.json      # about 15 minutes, idle machine
    python results/bench/levers.py --summarise results/bench/levers_cpu.json   # the ratios again, of a report

Each variant runs in a fresh process (XLA flags are read once per process), alternating with the others for
`--rounds` rounds; each process compiles the program `metadisco train` runs (`runs.seeds.seeds_program`, the
`classic` preset, 262,144 steps per seed) and times 3 runs. Reported: the median steps/s per variant over every
run, its ratio to the baseline's, and whether its metrics are bit-identical to the baseline's (a lever that changes
the numbers would also change every committed result). This VM's speed drifts between minutes (a 16-seed baseline
of 390k steps/s in one round and 255k in the next, with no other process running), so the report also gives
each variant's ratio to the baseline within each round (samples 3r .. 3r + 2) and their median, and the ratio
of the best samples (`ratio_of_best`: the speed of the code when the machine was at its fastest), the figure
to read when the machine drifts. Variants that need the package's code changed were tried as
prototypes and are reported in results/bench/README.md, not here.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

DEVICES = "--xla_force_host_platform_device_count=2"
# name -> (extra XLA flags, rollout_unroll, unrolled threefry)
VARIANTS = {
    "baseline": ("", 1, False),
    "rollout_unroll=4": ("", 4, False),
    "threefry unrolled on CPU": ("", 1, True),
    "xnnpack dots": ("--xla_cpu_use_xnnpack=true", 1, False),
    "no ynnpack fusions": ("--xla_cpu_experimental_ynn_fusion_type=", 1, False),
    "single-threaded eigen": ("--xla_cpu_multi_thread_eigen=false", 1, False),
    "copy insertion region analysis": ("--xla_cpu_copy_insertion_use_region_analysis=true", 1, False),
    "vector width 512": ("--xla_cpu_prefer_vector_width=512", 1, False),
}


def child(name: str, seeds: int) -> dict:
    _, unroll, threefry = VARIANTS[name]
    import jax
    import numpy as np

    if threefry:  # jax lowers threefry as a 5-round loop on CPU (compile time); the GPU lowering unrolls it
        from jax._src.interpreters import mlir
        from jax._src.random import threefry2x32 as tf

        mlir.register_lowering(tf.threefry2x32_p, tf._threefry2x32_lowering_rule, platform="cpu")
    from metadisco.objectives import BUILTIN_OBJECTIVES
    from metadisco.runs.seeds import resolve_config, seeds_program

    config = dataclasses.replace(resolve_config("CartPole-v1", timesteps=262_144), rollout_unroll=unroll)
    ppo = BUILTIN_OBJECTIVES["ppo"]
    fn, args, devices = seeds_program("CartPole-v1", ppo, ppo.zero_meta(), config, seeds)
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_s = time.perf_counter() - start
    out = jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(3):
        start = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)
    digest = hashlib.sha1(b"".join(np.asarray(x).tobytes() for x in jax.tree.leaves(out))).hexdigest()
    steps = seeds * config.num_updates * config.batch_size
    return {"steps_per_second": [steps / t for t in times], "compile_seconds": compile_s, "metrics_sha1": digest,
            "devices": len(devices)}


def summarise(path: str) -> None:
    """Add each variant's within-round ratios to the baseline (and their median) to the report at `path`."""
    with open(path) as f:
        report = json.load(f)
    for variants in report["figures"].values():
        base = variants["baseline"]["samples"]
        for figures in variants.values():
            rounds = len(figures["samples"]) // 3
            figures["ratio_within_rounds"] = [statistics.median(figures["samples"][3 * r:3 * r + 3])
                                              / statistics.median(base[3 * r:3 * r + 3]) for r in range(rounds)]
            figures["ratio_within_rounds_median"] = statistics.median(figures["ratio_within_rounds"])
            figures["ratio_of_best"] = max(figures["samples"]) / max(base)
    with open(path + ".tmp", "w") as f:
        json.dump(report, f, indent=1)
    os.replace(path + ".tmp", path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "SEEDS"))
    parser.add_argument("--summarise", metavar="REPORT")
    ns = parser.parse_args()
    if ns.summarise:
        summarise(ns.summarise)
        return
    if ns.child:
        print(json.dumps(child(ns.child[0], int(ns.child[1]))))
        return
    if not ns.out:
        parser.error("--out is required")
    runs = {f"seeds_{s}": {name: [] for name in VARIANTS} for s in (1, 16)}
    load = [round(os.getloadavg()[0], 2)]
    for _ in range(ns.rounds):
        for seeds in (1, 16):
            for name, (flags, _, _) in VARIANTS.items():
                env = {**os.environ, "XLA_FLAGS": f"{DEVICES} {flags}".strip(), "JAX_COMPILATION_CACHE_DIR": ""}
                done = subprocess.run([sys.executable, __file__, "--child", name, str(seeds)], env=env, check=True,
                                      capture_output=True, text=True)
                runs[f"seeds_{seeds}"][name].append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(seeds, name, runs[f"seeds_{seeds}"][name][-1]["steps_per_second"], file=sys.stderr)
    load.append(round(os.getloadavg()[0], 2))
    report = {"command": "python results/bench/levers.py --out " + ns.out, "load": load, "figures": {}}
    for figure, variants in runs.items():
        base = statistics.median(x for run in variants["baseline"] for x in run["steps_per_second"])
        base_hash = variants["baseline"][0]["metrics_sha1"]
        report["figures"][figure] = {
            name: {"steps_per_second": (med := statistics.median(x for run in rs for x in run["steps_per_second"])),
                   "ratio_to_baseline": med / base,
                   "bit_identical": all(run["metrics_sha1"] == base_hash for run in rs),
                   "compile_seconds": statistics.median(run["compile_seconds"] for run in rs),
                   "samples": [x for run in rs for x in run["steps_per_second"]]}
            for name, rs in variants.items()}
    tmp = ns.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, ns.out)
    summarise(ns.out)


if __name__ == "__main__":
    main()
