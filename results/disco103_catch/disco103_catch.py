"""Disco103 trained by metadisco's update-rule trainer on gymnax's Catch-bsuite with DeepMind's eval-notebook
settings (2 envs x 29 steps per update, a FIFO replay of 1024 trajectories, 64 drawn per learner step once 64 are
held, lr 1e-2, Adam clipped element-wise at 1, the 512-512 MLP agent with its LSTM action model), seeds vmapped.
Writes each update's mean return of the episodes that ended in it, per seed.

    python results/disco103_catch/disco103_catch.py --weights disco_103.npz --updates 1000 --seeds 0,1 --out FILE.json

`--env deepmind` trains on DeepMind's own Catch game instead (its dynamics and rewards, from `disco_rl`, which must
then be importable), restarted on the step that ends an episode, as DeepMind's jittable wrapper does too, at the
game's default board (10 rows x 5 columns, bsuite's); `--env deepmind-notebook` on the board DeepMind's eval notebook
plays (`jittable_envs.get_config_catch()`: 8 x 8, where a random policy scores -0.75 rather than -0.6).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.core.io import atomic_write_text
from metadisco.envs import EnvSpec, EnvStep, make_env
from metadisco.objectives import UPDATE_RULES, Objective
from metadisco.objectives.disco.weights import load_disco103
from metadisco.trainers import make_trainer
from metadisco.trainers.config import get_preset


class DeepMindCatch:
    """DeepMind's Catch game (`disco_rl.environments.jittable_envs._SingleStreamCatch`, +1 / -1 at the bottom row) as
    a metadisco `Env`: observation its rendered board, flattened. `notebook`: the eval notebook's board (8 x 8)
    rather than the game's default (10 x 5)."""

    def __init__(self, notebook: bool = False):
        from disco_rl.environments.jittable_envs import _SingleStreamCatch, get_config_catch

        self.game = _SingleStreamCatch(**(get_config_catch().to_dict() if notebook else {}))
        board = self.game._rows * self.game._columns
        self.spec = EnvSpec("Catch-deepmind" + ("-notebook" if notebook else ""), (board,), True, self.game.num_actions)

    def _board(self, state):
        return self.game.render(state).reshape(-1).astype(jnp.float32)

    def reset(self, key):
        state = self.game.initial_state(key)
        return self._board(state), state

    def step(self, key, state, action):
        reached = self.game.step(key, state, action)
        done = self.game.is_terminal(reached)
        fresh = self.game.initial_state(key)
        state = jnp.where(done, fresh, reached)
        final = self._board(reached)
        obs = jnp.where(done, self._board(fresh), final)
        return state, EnvStep(obs, self.game.reward(reached).astype(jnp.float32), done, jnp.bool_(False), final, {})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", required=True)
    parser.add_argument("--updates", type=int, default=1000)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--out", required=True)
    parser.add_argument("--env", choices=("gymnax", "deepmind", "deepmind-notebook"), default="gymnax",
                        help="gymnax's Catch-bsuite (default), DeepMind's Catch game at its default board (10 x 5) or "
                             "at its eval notebook's (8 x 8)")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    config = replace(get_preset("update_rule_classic"), total_timesteps=2 * 29 * args.updates)
    env = make_env("Catch-bsuite") if args.env == "gymnax" else DeepMindCatch(args.env == "deepmind-notebook")
    trainer = make_trainer(config, env, Objective(update_rule=UPDATE_RULES.make("disco")))
    meta = {"update_rule": jax.tree.map(jnp.asarray, load_disco103(args.weights))}
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    start = time.time()
    result = jax.jit(jax.vmap(trainer.train, in_axes=(0, None)))(keys, meta)
    returns = np.asarray(result.metrics.episode_return)
    out = {"env": env.spec.env_id, "seeds": seeds, "seconds": time.time() - start,
           "returns": [[None if np.isnan(r) else float(r) for r in row] for row in returns]}
    atomic_write_text(args.out, json.dumps(out) + "\n")
    window = max(args.updates // 10, 1)
    print("mean return per tenth:", [round(float(np.nanmean(returns[:, i:i + window])), 2)
                                     for i in range(0, args.updates, window)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
