"""Issue 64: what each lever on PPO's loop does on this device, and every program's kernels (one prepared call).

For CartPole PPO at the classic preset (PureJaxRL's settings), 1 and 16 seeds, each variant's compiled program is
timed alternating with the others (median of --repeats after a warm call) beside its kernels (`program_ops`: one
pass through every loop body, and per training update). Variants:

- `gae_unroll_1`: the GAE's reverse scan one step per iteration (the program before issue 64);
- `current`: the package as it is (the GAE unrolled 16 steps per iteration: the same numbers);
- `rollout_unroll_4`, `rollout_unroll_8`: the rollout scan unrolled (`TrainConfig.rollout_unroll`: XLA fuses the
  unrolled steps differently, so the numbers differ in their last bits).

It also writes the optimised HLO of the one-seed programs of metadisco, rejax and PureJaxRL (when at hand) to
`hlo.tar.gz`, for counting kernels body by body elsewhere.

    python results/bench/gpu/three_peers/levers.py --out DIR [--timesteps 131072] [--repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import io
import json
import statistics
import tarfile
import time
from pathlib import Path

import jax

import metadisco.trainers.ppo as ppo_module
from metadisco.bench import purejaxrl
from metadisco.bench import rejax as peers
from metadisco.bench.peers import program_ops
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.rl.gae import gae
from metadisco.runs.seeds import resolve_config, runs_program, seed_keys, seeds_program

ENV = "CartPole-v1"
VARIANTS = ("gae_unroll_1", "current", "rollout_unroll_4", "rollout_unroll_8")


def program(variant: str, num_seeds: int, timesteps: int):
    config = resolve_config(ENV, timesteps=timesteps)
    if variant.startswith("rollout_unroll_"):
        config = dataclasses.replace(config, rollout_unroll=int(variant.rsplit("_", 1)[1]))
    ppo_module.gae = functools.partial(gae, unroll=1) if variant == "gae_unroll_1" else gae
    runs_program.cache_clear()
    try:
        objective = BUILTIN_OBJECTIVES["ppo"]
        fn, args, _ = seeds_program(ENV, objective, objective.zero_meta(), config, num_seeds)
        compiled = fn.lower(*args).compile()
    finally:
        ppo_module.gae = gae
    return compiled, args, config


def seconds(compiled, args) -> float:
    start = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--timesteps", type=int, default=131_072)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    out = Path(args.out)
    result = {"device": str(jax.devices()[0].device_kind), "jax": jax.__version__, "env": ENV,
              "timesteps_per_seed": args.timesteps, "repeats": args.repeats, "figures": {}}
    hlo = {}
    for num_seeds in (1, 16):
        programs = {}
        for variant in VARIANTS:
            compiled, call_args, config = program(variant, num_seeds, args.timesteps)
            seconds(compiled, call_args)  # warm
            programs[variant] = (compiled, call_args)
            if num_seeds == 1 and variant == "current":
                hlo["metadisco.txt"] = compiled.as_text()
        samples = {variant: [] for variant in programs}
        for _ in range(args.repeats):
            for variant, (compiled, call_args) in programs.items():
                samples[variant].append(seconds(compiled, call_args))
        steps = num_seeds * config.num_updates * config.batch_size
        result["figures"][f"seeds_{num_seeds}"] = {
            variant: {"steps_per_second": steps / statistics.median(samples[variant]),
                      "seconds": samples[variant], **program_ops(programs[variant][0], config.num_updates)}
            for variant in programs}
        print(json.dumps({variant: round(f["steps_per_second"]) for variant, f in
                          result["figures"][f"seeds_{num_seeds}"].items()}), flush=True)
    config = resolve_config(ENV, timesteps=args.timesteps)
    key = seed_keys(1)[0]
    hlo["rejax.txt"] = jax.jit(peers.rejax_train(ENV, config)).lower(key).compile().as_text()
    if purejaxrl.available():
        hlo["purejaxrl.txt"] = jax.jit(purejaxrl.purejaxrl_train(ENV, config)).lower(key).compile().as_text()
    with tarfile.open(out / "hlo.tar.gz", "w:gz") as tar:
        for name, text in hlo.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (out / "levers.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
