"""Record OPEN's own optimiser update on random inputs, for tests/objectives/test_open_optimizer.py
(`test_update_equals_opens_own_code`). Issue 44, item 2.

Runs OPEN's code (AlexGoldie/rl-learned-optimization at b65037b, Apache-2.0: `rl_optimizer/network.py`
`GRU_Opt`, with its `learned_optimization` submodule; `utils.py` `ParameterReshaper`) unchanged, in the
environment OPEN pins (results/open/README.md: a venv with jax 0.5.3, flax 0.10.5, optax 0.2.4, gymnax 0.0.6):

    /tmp/open_venv/bin/python tests/data/record_open_reference.py /tmp/open_src/rl_optimizer \
        tests/data/open_reference.json

What it records, in OPEN's own layout (actor and critic towers {"params": {"Dense_i": {kernel, bias}}}, obs 12,
hidden 16, 3 actions): a random meta-parameter vector (1,211, normal * 0.5; not OPEN's released weights) and
random tower params; then STEPS optimiser steps as train.py's `_update_minbatch` takes them: raw gradients (some
steps over the clip, some under), clipped per tower by optax.clip_by_global_norm(0.5), training and batch
proportions from the step count (train.py's formulas with NUM_UPDATES 3, UPDATE_EPOCHS 2, NUM_MINIBATCHES 2),
layer proportions as train.py builds them, random per-unit activations, and OPEN's update (old - new params) with
the noise mask off; at the last step also the update with train.py's mask (noise on the actor) and its key.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

STEPS = 8
OBS, HIDDEN, ACTIONS = 12, 16, 3
NUM_UPDATES, EPOCHS, MINIBATCHES = 3, 2, 2


def main(open_src: str, out: str) -> None:
    gin = types.ModuleType("gin")  # network.py's only use of gin is the @gin.configurable decorator
    gin.configurable = lambda c: c
    sys.modules.setdefault("gin", gin)
    sys.path.insert(0, open_src)
    import jax
    import jax.flatten_util
    import jax.numpy as jnp
    import numpy as np
    import optax
    from network import GRU_Opt  # OPEN's
    from utils import ParameterReshaper  # OPEN's

    rng = np.random.default_rng(44)
    gopt = GRU_Opt(hidden_size=16, gru_features=8)
    reshaper = ParameterReshaper(gopt.init(jax.random.PRNGKey(0)))
    meta_vec = (0.5 * rng.standard_normal(reshaper.total_params)).astype(np.float32)
    opt = gopt.opt_fn(reshaper.reshape_single(jnp.asarray(meta_vec)))
    sizes = {"actor": [(OBS, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, ACTIONS)],
             "critic": [(OBS, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, 1)]}

    def tower(t, scale):
        return {"params": {f"Dense_{i}": {"kernel": jnp.asarray(scale * rng.standard_normal(s), jnp.float32),
                                          "bias": jnp.asarray(scale * rng.standard_normal(s[1]), jnp.float32)}
                           for i, s in enumerate(sizes[t])}}

    record = {"meta": meta_vec}

    def put(prefix, tree):
        for t in ("actor", "critic"):
            for layer, leaves in tree[t]["params"].items():
                for leaf, x in leaves.items():
                    record[f"{prefix}/{t}/{layer}/{leaf}"] = np.asarray(x, np.float32)

    params = {t: tower(t, 0.3) for t in ("actor", "critic")}
    put("params", params)
    state_a = opt.init(params["actor"], key=jax.random.PRNGKey(1))
    state_c = opt.init(params["critic"], key=jax.random.PRNGKey(2))
    layer_props = {t: {"params": {f"Dense_{i}": {"kernel": i / 2, "bias": i / 2} for i in range(3)}}
                   for t in ("actor", "critic")}  # train.py: i / (num_layers - 1) per tower
    clip = optax.clip_by_global_norm(0.5)
    config = {"VISUALISE": False}

    def mask(actor_on):
        return {t: {"params": {f"Dense_{i}": {"kernel": int(actor_on and t == "actor"),
                                              "bias": int(actor_on and t == "actor")} for i in range(3)}}
                for t in ("actor", "critic")}

    training, batch = [], []
    for k in range(STEPS):
        scale = 0.2 if k % 3 else 0.005  # most steps over the 0.5 clip, every third under it
        grads = {t: tower(t, scale) for t in ("actor", "critic")}
        put(f"grad{k}", grads)
        clipped = {t: clip.update(grads[t], None)[0] for t in ("actor", "critic")}
        acts = {}
        for t in ("actor", "critic"):
            units = [np.abs(rng.standard_normal(s[1])).astype(np.float32) for s in sizes[t]]
            units[0][rng.integers(0, HIDDEN)] = 0.0  # a dead unit
            for i, u in enumerate(units):
                record[f"act{k}/{t}/Dense_{i}"] = u
            acts[t] = tuple({"kernel": jnp.asarray(u), "bias": jnp.asarray(u)} for u in units)
        it = int(state_a.iteration)
        tp = jnp.float32((it // (MINIBATCHES * EPOCHS)) / (NUM_UPDATES - 1))  # train.py's training_prop
        bp = jnp.float32(((it // MINIBATCHES) % EPOCHS) / (EPOCHS - 1))  # train.py's batch_prop
        training.append(float(tp))
        batch.append(float(bp))
        key = jax.random.PRNGKey(100 + k)
        old = {"actor": state_a.params, "critic": state_c.params}
        if k == STEPS - 1:  # the same step with noise on the actor, from the same state
            na, nc, _, _ = opt.update(state_a, state_c, clipped, acts, key=key, training_prop=tp, config=config,
                                      batch_prop=bp, layer_props=layer_props, mask=mask(True))
            put("noisy_update", jax.tree.map(lambda a, b: a - b, old, {"actor": na.params, "critic": nc.params}))
        state_a, state_c, _, _ = opt.update(state_a, state_c, clipped, acts, key=key, training_prop=tp,
                                            config=config, batch_prop=bp, layer_props=layer_props, mask=mask(False))
        put(f"update{k}", jax.tree.map(lambda a, b: a - b, old, {"actor": state_a.params, "critic": state_c.params}))
    record["training_prop"] = np.asarray(training, np.float32)
    record["batch_prop"] = np.asarray(batch, np.float32)
    # Text, not .npz (no binaries in the repository): each float32 in its shortest exact decimal form.
    def f32(x):
        return np.format_float_scientific(np.float32(x), unique=True, trim="-")

    rows = [json.dumps(k) + ':{"shape":' + json.dumps(list(np.shape(a))) + ',"data":['
            + ",".join(f32(x) for x in np.ravel(a)) + "]}" for k, a in record.items()]
    Path(out).write_text("{" + ",\n".join(rows) + "}\n")
    print(f"wrote {out}: {len(record)} arrays; training {training}; batch {batch}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
