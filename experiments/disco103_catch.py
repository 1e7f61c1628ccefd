"""Disco103 trained by metadisco's update-rule trainer on gymnax's Catch-bsuite with DeepMind's eval-notebook
settings (2 envs x 29 steps per update, a FIFO replay of 1024 trajectories, 64 drawn per learner step once 64 are
held, lr 1e-2, Adam clipped element-wise at 1, the 512-512 MLP agent with its LSTM action model), seeds vmapped.
Writes each update's mean return of the episodes that ended in it, per seed.

    python experiments/disco103_catch.py --weights disco_103.npz --updates 1000 --seeds 0,1 --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.core.io import atomic_write_text
from metadisco.envs import make_env
from metadisco.objectives.disco.weights import load_disco103
from metadisco.trainers.config import TrainConfig
from metadisco.trainers.update_rule import RuleSettings, make_update_rule_trainer


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", required=True)
    parser.add_argument("--updates", type=int, default=1000)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    config = TrainConfig(num_envs=2, num_steps=29, total_timesteps=2 * 29 * args.updates, num_minibatches=1,
                         update_epochs=1, lr=1e-2, gamma=0.997, gae_lambda=0.95)
    trainer = make_update_rule_trainer(config, make_env("Catch-bsuite"), RuleSettings())
    meta = jax.tree.map(jnp.asarray, load_disco103(args.weights))
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    start = time.time()
    result = jax.jit(jax.vmap(trainer.train, in_axes=(0, None)))(keys, meta)
    returns = np.asarray(result.metrics.episode_return)
    out = {"env": "Catch-bsuite", "seeds": seeds, "seconds": time.time() - start,
           "returns": [[None if np.isnan(r) else float(r) for r in row] for row in returns]}
    atomic_write_text(args.out, json.dumps(out) + "\n")
    window = max(args.updates // 10, 1)
    print("mean return per tenth:", [round(float(np.nanmean(returns[:, i:i + window])), 2)
                                     for i in range(0, args.updates, window)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
