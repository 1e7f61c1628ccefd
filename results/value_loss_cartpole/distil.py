"""Distil the learned value loss into a closed form: L2 with one weight for overestimates and one for
underestimates (`asymmetric_l2`), the weights read off the learned loss's pull relative to L2's,
(d loss / d v) / (v - target), over the errors a CartPole critic makes (1 <= |v - target| <= 100, log-spaced):
each side's median. Writes `distilled.msgpack` (PPO's drift and Adam, as the learned objective) and
`distilled.json` (the weights, and the relative pull at a few errors, learned and distilled).

    python results/value_loss_cartpole/distil.py results/value_loss_cartpole/learned.msgpack results/value_loss_cartpole
"""

import dataclasses
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.objectives import VALUE_LOSSES, Progress, ValueLossInputs, load_objective, save_objective


def relative_pull(piece, meta, errors: np.ndarray) -> np.ndarray:
    """(d loss / d v) / (v - target) at target 0, value = error, start of training (progress 0)."""
    progress = Progress(jnp.float32(0.0), jnp.float32(128.0))
    loss = lambda v: piece(meta, ValueLossInputs(v, jnp.zeros_like(v), jnp.zeros_like(v)), progress).sum()
    return np.asarray(jax.grad(loss)(jnp.asarray(errors, jnp.float32))) / errors


source, out = Path(sys.argv[1]), Path(sys.argv[2])
objective, meta = load_objective(source)
magnitudes = np.geomspace(1.0, 100.0, 41)
over_pull = relative_pull(objective.value_loss, meta["value_loss"], magnitudes)
under_pull = relative_pull(objective.value_loss, meta["value_loss"], -magnitudes)
over = float(np.median(over_pull))
under = float(max(np.median(under_pull), 1e-6))  # the closed form needs a positive weight
distilled = dataclasses.replace(objective, value_loss=VALUE_LOSSES.make("asymmetric_l2", over=over, under=under))
save_objective(out / "distilled.msgpack", distilled, distilled.zero_meta())
show = [-100.0, -30.0, -10.0, -3.0, -1.0, 1.0, 3.0, 10.0, 30.0, 100.0]
report = {
    "source": str(source),
    "form": "asymmetric_l2: 0.5 (v - target)^2 x (over if v > target else under)",
    "over": over, "under": under, "over_to_under": over / under,
    "relative_pull_learned": dict(zip(map(str, show), relative_pull(objective.value_loss, meta["value_loss"],
                                                                     np.asarray(show)).tolist(), strict=True)),
    "relative_pull_range": {"over": [float(over_pull.min()), float(over_pull.max())],
                            "under": [float(under_pull.min()), float(under_pull.max())]},
}
(out / "distilled.json").write_text(json.dumps(report, indent=2) + "\n")
print(f"over {over:.4g}, under {under:.4g} (x L2); wrote {out / 'distilled.msgpack'} and distilled.json")
