"""Run OPEN's own PPO (AlexGoldie/rl-learned-optimization, `rl_optimizer/train.py` `make_train`) as a peer of
metadisco's: a released OPEN optimiser, or Adam through the same training loop, over N seeds, on one of OPEN's
configs (`rl_optimizer/configs.py`). Issue 44, item 2.

    /tmp/open_venv/bin/python results/open/run_open_peer.py --open-src /tmp/open_src/rl_optimizer \
        --env breakout --seeds 16 --optimizer open --out results/open/peer_breakout_open.json
    ... --optimizer adam --lr 5e-3 --anneal ...

Nothing of OPEN's code is copied or changed here; this script only imports it:
- `wandb` is replaced in `sys.modules` by an empty module (OPEN's `eval.py`, imported by `train.py`, calls
  `wandb.Api()` at import; nothing here logs);
- `--optimizer open`: the `.npy` is unflattened with OPEN's own `ParameterReshaper` on `GRU_Opt().init(...)`, as
  `eval.py --pretrained` does, and `train.make_train(config)` is vmapped over seeds as `eval.py` does
  (`jax.random.split(PRNGKey(seed), N)`, `VISUALISE` on);
- `--optimizer adam`: `train.GRU_Opt` is swapped for `AdamOpt` below, an optimiser with `GRU_Opt`'s interface
  (opt_fn -> init / update of the actor's and critic's states) whose update is optax.adam (eps 1e-5, PureJaxRL's)
  at `--lr`, linearly annealed per update with `--anneal` (PureJaxRL's MinAtar PPO: lr 5e-3 annealed), on the
  gradients OPEN's loop has already clipped (global norm 0.5, actor and critic separately). OPEN's repository has
  no Adam-PPO of its own (its `PPO_TEMP` constants are Adam-PPO returns measured elsewhere).

Scores, per seed:
- `final_return`: OPEN's own fitness (`eval.py`: `returned_episode_returns[..., -1, -1, :].mean()`: the last
  finished episode's return of each of the 64 envs at the last step of training, stochastic policy);
- `eval_return`: 16 deterministic episodes (argmax of the final actor's logits), each played to its first end,
  mean return (metadisco's `eval_episodes=16`; OPEN's utils.py has the same wrapper, `GymnaxLogEvalWrapper`).
Environments: gymnax 0.0.6 as OPEN pins it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import time
import types


def stub_wandb() -> None:
    wandb = types.ModuleType("wandb")
    wandb.Api = lambda *a, **k: None
    sys.modules["wandb"] = wandb


def make_adam_opt(lr: float, anneal: bool):
    """A class with `GRU_Opt`'s interface whose optimiser is Adam; `train.make_train` builds it as
    `GRU_Opt(hidden_size=..., gru_features=...)` and calls `.opt_fn(meta_params)`."""
    from typing import Any

    import flax
    import jax
    import jax.numpy as jnp
    import optax

    @flax.struct.dataclass
    class AdamState:
        params: Any
        inner: Any
        iteration: jnp.ndarray

    class AdamOpt:
        def __init__(self, hidden_size=16, gru_features=8):
            del hidden_size, gru_features

        def opt_fn(self, theta, is_training=False):
            del theta

            class _Opt:
                def init(self, params, model_state=None, num_steps=None, key=None):
                    return AdamState(params, optax.adam(lr, eps=1e-5).init(params), jnp.asarray(0, jnp.int32))

                def update(self, actor, critic, grad, activations, key=None, training_prop=0, batch_prop=0,
                           config=None, layer_props=None, model_state=None, mask=None):
                    steps = config["NUM_MINIBATCHES"] * config["UPDATE_EPOCHS"]
                    frac = 1.0 - (actor.iteration // steps) / config["NUM_UPDATES"]
                    rate = lr * frac if anneal else lr
                    out = []
                    for state, g in ((actor, grad["actor"]), (critic, grad["critic"])):
                        tx = optax.adam(rate, eps=1e-5)
                        updates, inner = tx.update(g, state.inner, state.params)
                        params = optax.apply_updates(state.params, updates)
                        out.append(AdamState(params, inner, state.iteration + 1))
                    flat = jax.flatten_util.ravel_pytree
                    means = [(jnp.mean(flat(s.params)[0]), jnp.mean(jnp.abs(flat(s.params)[0]))) for s in out]
                    if config["VISUALISE"]:
                        return out[0], out[1], means[0], means[1]
                    return out[0], out[1], means[0][1], means[1][1]

            return _Opt()

    return AdamOpt


def deterministic_returns(train, config, actor_params, key, episodes: int):
    """[episodes] returns of the actor's argmax policy, each episode played to its first end."""
    import gymnax
    import jax
    import jax.numpy as jnp

    env, env_params = gymnax.make(config["ENV_NAME"])
    actor = train.Actor(env.action_space(env_params).n, config=config)
    horizon = env_params.max_steps_in_episode + 1

    def one(k):
        k, reset_key = jax.random.split(k)
        obs, state = env.reset(reset_key, env_params)

        def step(carry, k):
            obs, state, total, done = carry
            pi, _ = actor.apply(actor_params, obs.reshape(-1))
            action = jnp.argmax(pi.logits)
            obs, state, reward, d, _ = env.step(k, state, action, env_params)
            total = total + reward * (1.0 - done)
            return (obs, state, total, jnp.logical_or(done, d).astype(jnp.float32)), None

        (_, _, total, _), _ = jax.lax.scan(step, (obs, state, 0.0, 0.0), jax.random.split(k, horizon))
        return total

    return jax.vmap(one)(jax.random.split(key, episodes))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--open-src", required=True, help="OPEN's rl_optimizer/ folder (with its two submodules)")
    ap.add_argument("--env", default="breakout")
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42, help="PRNGKey of the seed set (eval.py uses 42)")
    ap.add_argument("--optimizer", choices=["open", "adam"], required=True)
    ap.add_argument("--npy", default=None, help="default: <open-src>/pretrained/<env>_OPEN.npy")
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--anneal", action="store_true")
    ap.add_argument("--timesteps", type=float, default=None, help="default: the config's TOTAL_TIMESTEPS")
    ap.add_argument("--eval-episodes", type=int, default=16)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    stub_wandb()
    sys.path.insert(0, args.open_src)
    import jax
    import jax.numpy as jnp
    import numpy as np
    import train  # OPEN's
    from configs import all_configs  # OPEN's
    from network import GRU_Opt  # OPEN's
    from utils import ParameterReshaper  # OPEN's

    config = dict(all_configs[args.env])
    if args.timesteps is not None:
        config["TOTAL_TIMESTEPS"] = args.timesteps
    config["larger"] = False
    config["VISUALISE"] = True
    if args.optimizer == "open":
        npy = args.npy or f"{args.open_src}/pretrained/{args.env}_OPEN.npy"
        flat = jnp.array(jnp.load(npy, allow_pickle=True))
        meta = ParameterReshaper(GRU_Opt(hidden_size=16, gru_features=8).init(jax.random.PRNGKey(0))) \
            .reshape_single(flat)
    else:
        train.GRU_Opt = make_adam_opt(args.lr, args.anneal)
        meta = jnp.zeros(())
        npy = None

    run = jax.jit(jax.vmap(train.make_train(config), in_axes=(None, 0)))
    rngs = jax.random.split(jax.random.PRNGKey(args.seed), args.seeds)
    t0 = time.time()
    runner_state, metrics = jax.block_until_ready(run(meta, rngs))
    seconds = time.time() - t0
    returns = np.asarray(metrics["returned_episode_returns"])  # [seeds, updates, steps, envs]
    final = returns[:, -1, -1, :].mean(-1)
    actor_params = runner_state[0].params
    play = jax.jit(jax.vmap(lambda p, k: deterministic_returns(train, config, p, k, args.eval_episodes)))
    evals = np.asarray(play(actor_params, jax.random.split(jax.random.PRNGKey(args.seed + 1), args.seeds)))
    out = {
        "env": config["ENV_NAME"], "optimizer": args.optimizer, "npy": npy,
        "lr": args.lr if args.optimizer == "adam" else None,
        "anneal": args.anneal if args.optimizer == "adam" else None,
        "timesteps": config["TOTAL_TIMESTEPS"], "num_updates": int(config["NUM_UPDATES"]), "seeds": args.seeds,
        "seed": args.seed, "seconds": round(seconds, 1),
        "final_return": final.tolist(), "final_return_mean": float(final.mean()),
        "eval_return": evals.mean(-1).tolist(), "eval_return_mean": float(evals.mean()),
        "return_curve": returns[:, :, -1, :].mean(-1).mean(0).tolist(),
        "versions": {m: importlib.metadata.version(m) for m in ("jax", "flax", "optax", "gymnax", "evosax", "distrax")},
        "command": " ".join(sys.argv),
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"{args.optimizer}: final {out['final_return_mean']:.2f}  eval {out['eval_return_mean']:.2f}  "
          f"({seconds:.0f} s)")


if __name__ == "__main__":
    main()
