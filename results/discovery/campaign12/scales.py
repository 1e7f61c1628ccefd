"""The DPO scales a `learned_dpo` objective file holds, through training: alpha(p) and beta(p) at p = n / N, and
their ratio to DPO's published constants (alpha 2, beta 0.6).

    python results/discovery/campaign12/scales.py runs/discover_cpu12/objective_best.msgpack [more files...]
"""

import sys

import jax.numpy as jnp

from metadisco import Progress, load_objective

for path in sys.argv[1:]:
    objective, meta = load_objective(path)
    drift = objective.drift
    numbers = {k: [round(float(x), 4) for x in v] for k, v in meta["drift"].items()}
    print(f"{path}: {drift.name} {drift.options()}; meta-parameters {numbers}")
    print(f"  {'n / N':>6} {'alpha':>8} {'x DPO':>7} {'beta':>8} {'x DPO':>7}")
    for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
        alpha, beta = drift.scales(meta["drift"], Progress(jnp.float32(fraction), jnp.float32(1.0)))
        print(f"  {fraction:6.2f} {float(alpha):8.3f} {float(alpha) / drift.alpha:7.2f} {float(beta):8.3f} "
              f"{float(beta) / drift.beta:7.2f}")
