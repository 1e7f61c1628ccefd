"""Does PPO's clip bind? PPO eps 0.2 vs unclipped (eps 1e3) and DPO at several lrs, 16 seeds."""
import sys

import numpy as np

import metadisco

metadisco.use_all_cores()
from metadisco import Objective, mean_return, resolve_config, train_seeds  # noqa: E402 (after use_all_cores: the device count is set before JAX starts)
from metadisco.objectives.registry import DRIFTS  # noqa: E402 (after use_all_cores: the device count is set before JAX starts)

envs = sys.argv[1].split(",")
T = int(sys.argv[2])
lrs = [float(x) for x in sys.argv[3].split(",")]
extra = sys.argv[4:]
objs = {"ppo": Objective(drift=DRIFTS.make("ppo")), "noclip": Objective(drift=DRIFTS.make("ppo", eps=1000.0)),
        "dpo": Objective(drift=DRIFTS.make("dpo"))}
out = {}
for env in envs:
    for lr in lrs:
        cfg = resolve_config(env, None, [f"lr={lr}", *extra], T)
        row = {}
        for name, o in objs.items():
            r = train_seeds(env, o, o.zero_meta(), cfg, 16)
            auc = np.asarray(mean_return(r.metrics))
            row[name] = (float(np.nanmean(auc)), float(np.nanstd(auc)), float(np.nanmean(r.final_return)))
        print(env, lr, {k: tuple(round(x, 2) for x in v) for k, v in row.items()}, flush=True)
