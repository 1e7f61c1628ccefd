"""DeepMind's own Disco103 run on its jittable Catch, as its eval notebook (colabs/eval.ipynb) runs it, on one device:
2 envs x 29 steps per step, a FIFO buffer of 1024 trajectories, 64 drawn per learner step once 64 are held, lr 1e-2.
Needs disco_rl (results/disco103_port/run.sh makes a venv with it). Writes each step's mean return of the episodes
that ended in it.

    python results/disco103_catch/disco103_catch_deepmind.py --weights disco_103.npz --steps 1000 --seed 0
        --out FILE.json
"""

from __future__ import annotations

import argparse
import collections
import json
import time

import jax
import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", required=True)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import chex
    import rlax
    from disco_rl import agent as _agent_module  # noqa: F401  imported before the chex patch below
    from disco_rl import types, utils
    from disco_rl.environments import jittable_envs  # noqa: F401

    # chex 0.1.92's `chex.Array` is a typing.Union, whose isinstance does not ask jax.Array (which admits tracers), so
    # DeepMind's `assert isinstance(logits, chex.Array)` fails under jit and pmap; a tuple asks each class.
    chex.Array = (jax.Array, np.ndarray, np.bool_, np.number)
    # (set after disco_rl is imported: its annotations use chex.Array in `|` unions)

    from disco103_port import notebook_agent  # the same folder: this script's own

    from metadisco.objectives.disco.weights import load_disco103

    meta_params = load_disco103(args.weights)  # Haiku's tree, as the notebook's unflatten_params makes it
    batch_size, rollout_len, replay_ratio = 64, 29, 32
    num_envs = batch_size // replay_ratio
    env, agent, _ = notebook_agent(num_envs)
    key = jax.random.PRNGKey(args.seed)
    env_state, ts = env.reset(key)
    learner_state = agent.initial_learner_state(key)
    actor_state = agent.initial_actor_state(key)

    @jax.jit
    def unroll(params, actor_state, ts, env_state, rng):
        def one(carry, k):
            env_state, ts, actor_state = carry
            actor_ts, actor_state = agent.actor_step(params, k, ts, actor_state)
            env_state, ts = env.step(env_state, actor_ts.actions)
            return (env_state, ts, actor_state), actor_ts
        (env_state, ts, actor_state), rollout = jax.lax.scan(one, (env_state, ts, actor_state),
                                                             jax.random.split(rng, rollout_len))
        return types.ActorRollout.from_timestep(rollout), actor_state, ts, env_state

    learner_step = jax.jit(agent.learner_step, static_argnums=(5,))
    buffer = collections.deque(maxlen=1024)
    np_rng = np.random.default_rng(17)
    returns, acc, start = [], np.zeros(num_envs), time.time()
    for step in range(args.steps):
        key, rng_actor, rng_learner = jax.random.split(key, 3)
        rollout, actor_state, ts, env_state = unroll(learner_state.params, actor_state, ts, env_state, rng_actor)
        rollout = jax.device_get(rollout)
        buffer.extend(rlax.tree_split_leaves(rollout, axis=1))
        ended = []
        for r, d in zip(np.asarray(rollout.rewards), np.asarray(rollout.discounts), strict=True):
            acc += r
            ended += list(acc[d == 0])
            acc = acc * (d != 0)
        returns.append(float(np.mean(ended)) if ended else None)
        if len(buffer) >= batch_size:
            batch = utils.tree_stack([buffer[i] for i in np_rng.integers(len(buffer), size=batch_size)], axis=1)
            learner_state, _, _ = learner_step(rng_learner, batch, learner_state, actor_state, meta_params, False)
        if step % 100 == 99:
            recent = [r for r in returns[-100:] if r is not None]
            print(f"step {step + 1}: mean return {np.mean(recent):.2f} ({time.time() - start:.0f} s)", flush=True)
    from metadisco.core.io import atomic_write_text
    atomic_write_text(args.out, json.dumps({"env": "disco_rl jittable Catch", "seed": args.seed, "returns": returns,
                                            "seconds": time.time() - start}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
