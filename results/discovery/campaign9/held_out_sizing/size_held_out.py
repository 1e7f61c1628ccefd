"""Size candidate held-out envs for campaign 9: PPO's final return (lr 0.0025, 8 seeds) at a few budgets against a
random policy. Only PPO and a random policy run here; no objective is looked at.

    python results/discovery/campaign9/held_out_sizing/size_held_out.py Asterix-MinAtar@250000,500000 ...

prints one line per env: the random policy's return, then per budget (N = number of updates) the IQM of the 8
final returns, their range and the wall time (taken beside other jobs: not a speed figure).
"""

import sys
import time

import numpy as np

from metadisco import random_policy_return, resolve_config, resolve_objective, train_seeds

objective, meta = resolve_objective("ppo")
for spec in sys.argv[1:]:
    env, budgets = spec.split("@")
    row = [f"{env:24s} random {random_policy_return(env):8.2f}"]
    for budget in budgets.split(","):
        config = resolve_config(env, overrides={"lr": 0.0025}, timesteps=int(budget))
        start = time.time()
        returns = train_seeds(env, objective, meta, config, 8).final_return
        iqm = np.sort(returns)[2:6].mean()
        row.append(f"{int(budget) // 1000}k(N={config.num_updates}): IQM {iqm:8.2f} "
                   f"[{np.nanmin(returns):.1f},{np.nanmax(returns):.1f}] {time.time() - start:.0f}s")
    print(" | ".join(row), flush=True)
