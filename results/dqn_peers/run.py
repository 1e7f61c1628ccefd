"""DQN in metadisco beside rejax's DQN at the same settings (the `dqn_classic` preset: PureJaxRL's dqn.py on
CartPole-v1, 5e5 steps), declared before it ran.

Both train 8 seeds; every 25,000 env steps each plays greedy episodes with its current Q-network (rejax: its own
evaluation, 128 episodes; metadisco: `make_greedy_returns`, 128 episodes, on a key apart from training). The
table is the greedy return at the end and at a few points, mean and range over seeds; the figure both curves.

    python results/dqn_peers/run.py results/dqn_peers     # about 7 min on 2 cores
    python results/dqn_peers/run.py results/dqn_peers --redraw   # the figure again from curves.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from metadisco import BUILTIN_OBJECTIVES, get_preset, make_env, make_trainer
from metadisco.bench.rejax import rejax_dqn
from metadisco.trainers.greedy import make_greedy_returns

ENV = "CartPole-v1"
SEEDS = 8
EVAL_EVERY = 25_000
EPISODES = 128


def metadisco_curves(config, keys):
    """[points, seeds] greedy returns every EVAL_EVERY env steps."""
    objective = BUILTIN_OBJECTIVES["dqn"]
    env = make_env(ENV)
    trainer = make_trainer(config, env, objective)
    play = make_greedy_returns(config, env, EPISODES)
    chunk = EVAL_EVERY // config.batch_size

    @jax.jit
    def run(key):
        state = trainer.init(key, objective.zero_meta())

        def segment(state, i):
            state, _ = trainer.step(state, chunk)
            returns = play(state.params, jax.random.fold_in(key, i), state.env_state)
            return state, jnp.mean(returns)

        _, curve = jax.lax.scan(segment, state, jnp.arange(config.num_updates // chunk))
        return curve

    return np.asarray(jax.vmap(run)(keys)).T


def rejax_curves(config, keys):
    algo = rejax_dqn(ENV, config, eval_freq=EVAL_EVERY)
    _, (_, returns) = jax.jit(jax.vmap(algo.train))(keys)
    return np.asarray(returns).mean(axis=-1).T  # [evaluations, seeds]


def draw(out: Path, rows: dict, steps: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, colour in (("metadisco", "C0"), ("rejax", "C1")):
        r = np.asarray(rows[name])
        ax.plot(steps[name], r.mean(axis=1), color=colour, label=f"{name} DQN (mean)")
        ax.fill_between(steps[name], r.min(axis=1), r.max(axis=1), color=colour, alpha=0.2)
    ax.set_xlabel("env steps")
    ax.set_ylabel(f"greedy return ({EPISODES} episodes)")
    ax.set_title(f"DQN on {ENV}, {SEEDS} seeds each (band: min to max)", fontsize=10)
    ax.legend(loc="lower right")
    fig.tight_layout()
    (out / "figures").mkdir(exist_ok=True)
    fig.savefig(out / "figures" / "dqn_peers.png", dpi=120)


def main(out: str) -> None:
    config = get_preset("dqn_classic")
    keys = jax.random.split(jax.random.PRNGKey(0), SEEDS)
    out = Path(out)
    rows = {}
    for name, curves in (("metadisco", metadisco_curves), ("rejax", rejax_curves)):
        start = time.perf_counter()
        rows[name] = curves(config, keys)
        print(f"{name}: {time.perf_counter() - start:.0f} s, shape {rows[name].shape}", flush=True)
    steps = {"metadisco": EVAL_EVERY * np.arange(1, len(rows["metadisco"]) + 1),
             "rejax": EVAL_EVERY * np.arange(1, len(rows["rejax"]) + 1)}
    record = {"env": ENV, "seeds": SEEDS, "episodes": EPISODES, "eval_every": EVAL_EVERY,
              "curves": {k: v.tolist() for k, v in rows.items()}, "steps": {k: v.tolist() for k, v in steps.items()}}
    (out / "curves.json").write_text(json.dumps(record, indent=1) + "\n")
    print("| env steps | metadisco DQN, mean [min, max] of 8 seeds | rejax DQN |")
    print("|---|---|---|")
    for at in (100_000, 200_000, 300_000, 400_000, 500_000):
        cells = []
        for name in ("metadisco", "rejax"):
            i = int(np.flatnonzero(steps[name] == at)[0]) if at in steps[name] else len(steps[name]) - 1
            r = rows[name][i]
            cells.append(f"{r.mean():.1f} [{r.min():.0f}, {r.max():.0f}]")
        print(f"| {at:,} | {cells[0]} | {cells[1]} |")
    draw(out, rows, steps)


if __name__ == "__main__":
    folder = sys.argv[1] if len(sys.argv) > 1 else "results/dqn_peers"
    if "--redraw" in sys.argv:
        record = json.loads((Path(folder) / "curves.json").read_text())
        draw(Path(folder), record["curves"], record["steps"])
    else:
        main(folder)
