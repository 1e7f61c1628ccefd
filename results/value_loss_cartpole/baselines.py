"""The L2 baselines the learned value loss is judged against, as objective files of the same structure (so
`evaluate` trains all of them in one compiled call, on the same seed keys):

- `l2.msgpack`: the run's objective at zero meta-parameters: L2 exactly (what the ES started from, and the
  blog's baseline);
- `l2_scaled.msgpack`: L2 times one constant, exp(b) with b the network's output bias, set to the best value
  loss scale of the vf_coef sweep at the task (sizing/vf_coef: vf_coef 0.03125 = the preset's 0.5 / 16). A
  learned loss that only rescaled L2 would tie this one; to beat it, its shape must matter.

    python results/value_loss_cartpole/baselines.py runs/value_loss_cartpole results/value_loss_cartpole
"""

import json
import math
import sys
from pathlib import Path

from metadisco import load_objective, save_objective

run, out = Path(sys.argv[1]), Path(sys.argv[2])
objective, _ = load_objective(run / "objective.msgpack")
sweep = json.loads((Path(__file__).parent / "sizing" / "vf_coef" / "sweep.json").read_text())
best = sweep["best"]["hyper"]["vf_coef"]
preset = 0.5
zero = objective.zero_meta()
save_objective(out / "l2.msgpack", objective, zero)
scaled = {**zero, "value_loss": {**zero["value_loss"]}}
last = f"dense_{len(zero['value_loss']) - 1}"
output = zero["value_loss"][last]
scaled["value_loss"][last] = {**output, "bias": output["bias"] + math.log(best / preset)}
save_objective(out / "l2_scaled.msgpack", objective, scaled)
print(f"wrote l2.msgpack and l2_scaled.msgpack (x {best / preset:g}, the sweep's vf_coef {best:g} / {preset:g})")
