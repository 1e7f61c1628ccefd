"""Fit and check the dry run's GPU time model on what `iteration_cost.py` measured on the GPU (issue 45, item 4).

For each program of `iteration_cost.json`, this builds the same program here (on the CPU, one device) and counts
with `metadisco.parallel.cost`: its loop iterations, the kernels XLA's CPU compiler makes of it (each loop body's,
times its trips) and its FLOPs and bytes. From `hlo.tar.gz` it counts the kernels XLA's GPU compiler made of the
same program (`kernel_count` of the GPU's HLO, each loop's body times its known trip count). It prints
the GPU's kernels per CPU kernel (`GPU_KERNELS_PER_CPU_KERNEL`), the seconds per GPU kernel fitted with the
roofline beside it (`GPU_KERNEL_SECONDS`), and each program's estimate against its measured time, by the new model
and by the old one (loop iterations x 25 us, or the roofline if larger).

Held out of the fit: two recipes' generations as their dry runs measured them on the GPU (`dryrun_*.log`), against
the estimate the dry run makes for an H200 from a CPU (printed here; `plan` without calling the programs).

    python results/bench/gpu/kernels/iteration_model.py DIR   # iteration_cost.py's --out: its JSON, hlo.tar.gz

The HLO tarball is not committed (a binary); its kernel counts are, as DIR/gpu_kernels.json, which this reads when
the tarball is absent: `python results/bench/gpu/kernels/iteration_model.py results/bench/gpu/kernels`.
"""

from __future__ import annotations

import json
import statistics
import sys
import tarfile
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from iteration_cost import build  # noqa: E402  (beside this file)

from metadisco.parallel import cost  # noqa: E402

H200 = cost.ACCELERATORS["H200"]
OLD_ITERATION_SECONDS = 25e-6  # the model before the kernel count


def main(folder: Path) -> None:
    measured = json.loads((folder / "iteration_cost.json").read_text())
    counts = folder / "gpu_kernels.json"  # the tarball's counts, kept where the tarball (a binary) is not
    if (folder / "hlo.tar.gz").exists():
        found = {}
        with tarfile.open(folder / "hlo.tar.gz") as tar:
            for member in tar.getmembers():
                if member.isfile():
                    text = tar.extractfile(member).read().decode()
                    found[Path(member.name).name.removesuffix(".hlo.txt")] = cost.kernel_count(text, trips=True)
        counts.write_text(json.dumps(found, indent=1) + "\n")
    launched = json.loads(counts.read_text())
    devices = jax.local_devices()[:1]
    rows = []
    for p in measured["programs"]:
        fn, args, _ = build(p["env"], p["timesteps_per_run"], p["objective"], p["rows"], p["per_row_meta"], devices)
        counted = cost.program_cost(fn, *args)
        cpu_kernels = counted.kernels / cost.GPU_KERNELS_PER_CPU_KERNEL
        rows.append({"name": p["name"], "seconds": p["median_seconds"], "iterations": counted.iterations,
                     "cpu_kernels": cpu_kernels, "gpu_kernels": launched[p["name"]],
                     "roofline": max(counted.flops / H200.flops, counted.bytes / H200.bandwidth), "cost": counted})
    ratio = statistics.median(r["gpu_kernels"] / r["cpu_kernels"] for r in rows)
    # Seconds per GPU kernel: least squares on relative error of kernels x k + roofline against the measured time.
    kernels = np.array([r["cpu_kernels"] * ratio for r in rows])
    seconds = np.array([r["seconds"] for r in rows])
    roof = np.array([r["roofline"] for r in rows])
    k = float(np.sum(kernels * (seconds - roof) / seconds**2) / np.sum((kernels / seconds) ** 2))
    ratios = [r["gpu_kernels"] / r["cpu_kernels"] for r in rows]
    print(f"device: {measured['device_kind']} (jax {measured['jax']}); H200 roofline: {H200.describe()}")
    print(f"GPU kernels per CPU kernel: median {ratio:.3f} (range {min(ratios):.2f}-{max(ratios):.2f}); "
          f"fitted seconds per GPU kernel: {k * 1e6:.3f} us")
    print(f"in metadisco.parallel.cost now: GPU_KERNELS_PER_CPU_KERNEL = {cost.GPU_KERNELS_PER_CPU_KERNEL}, "
          f"GPU_KERNEL_SECONDS = {cost.GPU_KERNEL_SECONDS * 1e6:g} us")
    print(f"{'program':22s} {'measured':>9s} {'iterations':>10s} {'us/iter':>8s} {'GPU kernels':>11s} {'per iter':>8s} "
          f"{'us/kernel':>9s} {'CPU kernels':>11s} {'GPU/CPU':>7s} {'new est.':>9s} {'new/meas':>8s} {'old est.':>9s} "
          f"{'old/meas':>8s}")
    for r in rows:
        s, n, g, c = r["seconds"], r["iterations"], r["gpu_kernels"], r["cpu_kernels"]
        new = cost.roofline_seconds(r["cost"], H200)
        old = max(n * OLD_ITERATION_SECONDS, r["roofline"])
        print(f"{r['name']:22s} {s:8.3f}s {n:10,.0f} {1e6 * s / n:8.1f} {g:11,d} {g / n:8.1f} {1e6 * s / g:9.2f} "
              f"{c:11,.0f} {g / c:7.2f} {new:8.3f}s {new / s:8.2f} {old:8.3f}s {old / s:8.2f}")


RECIPES = ("experiments/quickstart.yaml", "experiments/short_long_minatar.yaml")


def recipes() -> None:
    """The dry run's H200 estimate of each recipe, from this machine, on one device as on the GPU."""
    from metadisco.meta.load import load_config
    from metadisco.meta.plan import plan
    from metadisco.meta.step import GenerationStep
    from metadisco.parallel import devices
    from metadisco.parallel.sharding import make_mesh

    for path in RECIPES:
        result = plan(GenerationStep(load_config(path), make_mesh(devices.select(1))), measure=False)
        est = result.estimate(H200)
        old = max(result.per_generation.cost.iterations * OLD_ITERATION_SECONDS,
                  result.per_generation.cost.flops / H200.flops, result.per_generation.cost.bytes / H200.bandwidth)
        print(f"{path}: estimate per generation {est['seconds_per_generation']:.3f} s (old model {old:.3f} s), "
              f"whole run {est['seconds_total']:.1f} s, {est['bound']}-bound")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    recipes()
