"""Why the drift meta-trained with tuned fitness collapses at 1e6 steps (issue 63's follow-up).

1. Each drift's penalty on lowering an action's probability when its advantage is negative: d drift / d r over
   r in [0.3, 0.8), A in [-3, -0.1] (beyond PPO's clip at 1 - 0.2), as a share of PPO's (PPO's drift has slope A
   there, so its surrogate stops pushing; a share of 0 means the drift lets the ratio fall without limit).
2. The policy's entropy over training on SpaceInvaders-MinAtar at 1e6 steps and lr 5e-3 (where the
   DiscoBench-protocol judge saw the collapse), 4 seeds, the MinAtar preset otherwise, beside the kept drift and PPO.

    python results/talpo_minatar_tuned/collapse.py > results/talpo_minatar_tuned/collapse.txt   # ~4 min on 2 cores
"""

import metadisco

metadisco.use_all_cores()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from metadisco.objectives import BUILTIN_OBJECTIVES, Progress  # noqa: E402
from metadisco.objectives.files import load_objective  # noqa: E402
from metadisco.objectives.registry import DriftInputs  # noqa: E402
from metadisco.runs.seeds import resolve_config, train_seeds  # noqa: E402

DRIFTS = {"tuned": "results/talpo_minatar_tuned/run/objective.msgpack",
          "kept": "results/short_long_minatar/kept.msgpack"}
ENV, STEPS, LR, SEEDS = "SpaceInvaders-MinAtar", 1_000_000, 5e-3, 4
PPO = BUILTIN_OBJECTIVES["ppo"]

print("1. penalty on lowering a negative-advantage action's probability beyond the clip, as a share of PPO's")
ratio, advantage = jnp.meshgrid(jnp.linspace(0.3, 0.79, 50), -jnp.linspace(0.1, 3.0, 30))
for name, path in DRIFTS.items():
    objective, meta = load_objective(path)
    for fraction in (0.0, 0.5, 1.0):
        def drift(r, a, fraction=fraction, objective=objective, meta=meta):
            return objective.drift(meta["drift"], DriftInputs(r, a), Progress(jnp.float32(fraction), jnp.float32(122)))
        share = jax.vmap(jax.vmap(jax.grad(drift)))(ratio, advantage) / advantage
        print(f"  {name:5s} n/N = {fraction:.1f}: mean share {float(share.mean()):.2f}; points with none (< 0.05): "
              f"{float((share < 0.05).mean()):.2f}")

print(f"2. policy entropy on {ENV}, {STEPS:,} steps, lr {LR}, {SEEDS} seeds (mean over seeds at points of training)")
config = resolve_config(ENV, timesteps=STEPS, overrides={"lr": LR})
for name, path in {**DRIFTS, "ppo": None}.items():
    objective, meta = load_objective(path) if path else (PPO, PPO.zero_meta())
    result = train_seeds(ENV, objective, meta, config, SEEDS, seed=0)
    entropy = np.asarray(result.metrics.losses["entropy"])
    points = [int(entropy.shape[1] * f) - 1 for f in (0.1, 0.25, 0.5, 0.75, 1.0)]
    print(f"  {name:5s} entropy at 10/25/50/75/100%: {' '.join(f'{e:.3f}' for e in entropy[:, points].mean(0))}; "
          f"lowest seed at the end {entropy[:, -1].min():.3f}; final returns "
          f"{', '.join(f'{r:.1f}' for r in result.final_return)}")
