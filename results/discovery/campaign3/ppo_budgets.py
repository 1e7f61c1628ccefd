"""PPO's final return (lr 2.5e-3, each env's preset otherwise) at candidate budgets: which budgets learn but do
not saturate. PPO only; no objective is tried here."""
import sys
import time

import metadisco

metadisco.use_all_cores()
import numpy as np  # noqa: E402 (after use_all_cores: the device count is set before JAX starts)

from metadisco import BUILTIN_OBJECTIVES, resolve_config, train_seeds  # noqa: E402 (after use_all_cores: the device count is set before JAX starts)

ppo = BUILTIN_OBJECTIVES["ppo"]
for spec in sys.argv[1:]:
    env, budgets, seeds = spec.split("@")
    for b in budgets.split(","):
        cfg = resolve_config(env, overrides=["lr=0.0025"], timesteps=int(float(b)))
        t = time.time()
        r = train_seeds(env, ppo, ppo.zero_meta(), cfg, int(seeds))
        fr = r.final_return
        print(f"{env:28s} {int(float(b)):>8d} seeds {seeds}: final {np.nanmean(fr):9.3f} +- {np.nanstd(fr):7.3f}"
              f"  min {np.nanmin(fr):8.3f} max {np.nanmax(fr):8.3f}  ({time.time()-t:.0f}s)", flush=True)
