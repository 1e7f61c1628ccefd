"""Does a floor under the drift's trust region stop the tuned drift's collapse? (an intervention)

The collapse diagnosis (results/talpo_minatar_tuned/collapse.txt) found two things side by side: the TA-LPO drift
meta-trained with tuned fitness keeps 2-5% of PPO's penalty for lowering a negative-advantage action beyond the
clip, and at 1e6 steps its policy's entropy collapses (0.03 on SpaceInvaders at lr 5e-3, returns near 0). A
correlation. This script intervenes: the same drift with `floor` f (drift_f = max(drift, f ppo),
`metadisco.objectives.lpo`), its meta-parameters unchanged, for f in {0.5, 1.0} fixed before any run, beside the
unfloored drift and PPO.

Where: the drift's own training envs, Asterix and Breakout (MinAtar), at 1e6 steps (6-13x its training length),
lr 5e-3 (the MinAtar preset's, the middle of the tuned grid), 4 seeds, the MinAtar preset otherwise. SpaceInvaders
and Freeway, its held-out envs, are not used here, so that a floor chosen from this can still be judged on them.

Declared before it ran. Read: if the unfloored drift's entropy collapses here too and a floor keeps it near
PPO's (and its return at or above PPO's), the missing penalty is a cause, and f (the smallest that does) is the
floor a meta-training run can build in. If the unfloored drift does not collapse on these envs, this says nothing.

    python results/talpo_floor/intervention.py > results/talpo_floor/intervention.txt   # ~12 min on 2 cores
"""

import dataclasses

import metadisco

metadisco.use_all_cores()

import numpy as np  # noqa: E402

from metadisco.objectives import BUILTIN_OBJECTIVES  # noqa: E402
from metadisco.objectives.files import load_objective  # noqa: E402
from metadisco.runs.seeds import resolve_config, train_seeds  # noqa: E402

ENVS, STEPS, LR, SEEDS = ("Asterix-MinAtar", "Breakout-MinAtar"), 1_000_000, 5e-3, 4
FLOORS = (0.5, 1.0)

tuned, tuned_meta = load_objective("results/talpo_minatar_tuned/run/objective.msgpack")
ppo = BUILTIN_OBJECTIVES["ppo"]
methods = {"tuned": (tuned, tuned_meta)}
for floor in FLOORS:
    floored = dataclasses.replace(tuned, drift=dataclasses.replace(tuned.drift, floor=floor))
    methods[f"floor {floor}"] = (floored, tuned_meta)
methods["ppo"] = (ppo, ppo.zero_meta())

print(f"policy entropy and final return at {STEPS:,} steps, lr {LR}, {SEEDS} seeds (seed 0), MinAtar preset")
for env in ENVS:
    config = resolve_config(env, timesteps=STEPS, overrides={"lr": LR})
    print(env)
    for name, (objective, meta) in methods.items():
        result = train_seeds(env, objective, meta, config, SEEDS, seed=0)
        entropy = np.asarray(result.metrics.losses["entropy"])
        points = [int(entropy.shape[1] * f) - 1 for f in (0.1, 0.25, 0.5, 0.75, 1.0)]
        returns = np.asarray(result.final_return)
        print(f"  {name:9s} entropy at 10/25/50/75/100%: {' '.join(f'{e:.3f}' for e in entropy[:, points].mean(0))};"
              f" lowest seed at the end {entropy[:, -1].min():.3f}; final return mean {returns.mean():.2f}"
              f" ({', '.join(f'{r:.1f}' for r in returns)})", flush=True)
