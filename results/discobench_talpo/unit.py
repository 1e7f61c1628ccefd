"""One unit of run.sh, run inside a DiscoBench task's env directory with DiscoBench's Python: its train.py and
main.py's evaluation train and score `seeds` agents at one of its 10 learning rates, one agent at a time, with the
keys its main.py gives them (PRNGKey(30) split into seeds, each split over the learning rates; eval PRNGKey(42)).
The record is written atomically to OUT when every seed is done.

    python unit.py TIMESTEPS SEEDS LR_INDEX METHOD ENV OUT
"""

import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from config import config
from main import make_eval
from train import make_train

timesteps, seeds, lr_index = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
method, env, out_path = sys.argv[4], sys.argv[5], sys.argv[6]
config["TOTAL_TIMESTEPS"] = timesteps
lrs = jnp.linspace(config["LR"], config["LR"] * 10, 10)  # DiscoBench's grid: linspace(1e-3, 1e-2, 10)
train = jax.jit(make_train(config))
evaluate = jax.jit(make_eval(config, 16))
one = lambda tree: jax.tree.map(lambda x: x[None], tree)  # make_eval maps over a learning-rate axis
record = {"method": method, "env": env, "lr_index": lr_index, "lr": float(lrs[lr_index]), "timesteps": timesteps,
          "train_return": [], "eval_return": [], "seconds": []}
for seed_key in jax.random.split(jax.random.PRNGKey(30), seeds):
    start = time.perf_counter()
    result = train(jax.random.split(seed_key, len(lrs))[lr_index], lrs[lr_index])
    returns = np.asarray(result["metrics"]["mean_training_return"])
    record["train_return"].append(float(np.nanmean(returns[int(len(returns) * 0.95):])))
    params, env_state = result["runner_state"][0].params, result["runner_state"][1]
    record["eval_return"].append(float(np.mean(evaluate(one(params), jax.random.PRNGKey(42), one(env_state)))))
    record["seconds"].append(round(time.perf_counter() - start, 1))
tmp = out_path + ".tmp"
with open(tmp, "w") as f:
    json.dump(record, f)
os.replace(tmp, out_path)
print(f"{method} {env} lr {record['lr']:.4g}: deterministic {np.mean(record['eval_return']):.2f}, "
      f"{sum(record['seconds']):.0f} s", flush=True)
