"""Records a tiny two-task meta-training run (both tasks every generation), paired and fixed-normalised, to check
that adding `combine:` (rank combination of tasks) changed nothing for a config without it. Run once on the code
before that change, with the test session's 4 CPU devices:
`PYTHONPATH=OLD_TREE python tests/data/record_pre_task_ranks.py`; tests/meta/test_task_ranks.py reruns `runs()`
on the current code and compares: the objective's meta-parameters (their bytes) and the numbers of every metrics
line. (It compared the objective file's bytes until the file's spec began to list every option of its pieces,
the drifts' `floor` at 0 too, which changed the bytes and no number: recorded again on the code just before
that change, with the meta-parameters' digest in place of the file's.)
Re-recorded when `final_return` started scoring a run with no episode in its final window by its
latest update that finished any, instead of NaN: a deliberate change of those runs' numbers (the paired run
here has such members; the fixed one does not and recorded the same numbers again).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tempfile
from pathlib import Path

PATH = Path(__file__).with_name("pre_task_ranks.json")
TRAIN = {"num_envs": 4, "num_steps": 16, "hidden_sizes": [8, 8], "num_minibatches": 2, "update_epochs": 2,
         "lr": 0.01}
CONFIG = {
    "objective": {"drift": {"kind": "talpo", "hidden": 8}},
    "tasks": [{"env": "CartPole-v1", "timesteps": 256, "seeds": 2, "train": TRAIN},
              {"env": "UmbrellaChain-bsuite", "timesteps": 512, "seeds": 2, "train": TRAIN}],
    "normalise": "paired",
    "strategy": {"name": "Open_ES", "population_size": 4, "sigma_init": 0.5, "lr": 0.1},
    "generations": 2,
    "eval_every": 100,
    "held_out_envs": ["Acrobot-v1"],
}
# The metrics keys that existed before: their values are compared (JSON floats read back exactly).
KEYS = ("generation", "fitness_mean", "fitness_max", "fitness_min", "fitness_std", "nan_count", "returns", "tasks",
        "ppo", "fitness_of_initial_mean", "fitness_of_mean", "env_steps")


RENAMED = {"baseline": "ppo"}  # a key's name now -> its name when recorded (the paired control's old name)


def as_recorded(line: dict) -> dict:
    """A metrics line with today's key names put back to the recorded ones."""
    return {RENAMED.get(k, k): v for k, v in line.items()}


def config(**changes) -> dict:
    out = copy.deepcopy(CONFIG)
    out.update(changes)
    return out


def meta_sha256(path: Path) -> str:
    """The digest of an objective file's meta-parameters: every leaf's path, dtype, shape and bytes (the numbers
    the run found, apart from how the file writes its spec)."""
    import jax
    import numpy as np

    from metadisco.objectives.files import load_objective

    digest = hashlib.sha256()
    for keypath, leaf in jax.tree_util.tree_flatten_with_path(load_objective(path)[1])[0]:
        array = np.asarray(leaf)
        for part in (jax.tree_util.keystr(keypath), str(array.dtype), str(array.shape)):
            digest.update(part.encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def run(out: Path, **changes) -> dict:
    """Meta-train `config(**changes)` into `out`: {meta_sha256, metrics: [the KEYS of each line]}."""
    from metadisco.meta.loop import meta_train

    meta_train(config(**changes), out, progress=False, plot=False)
    lines = [as_recorded(json.loads(line)) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {"meta_sha256": meta_sha256(out / "objective.msgpack"),
            "metrics": [{k: line[k] for k in KEYS if k in line} for line in lines]}


def runs(tmp: Path) -> dict:
    return {"paired": run(tmp / "paired"), "fixed": run(tmp / "fixed", normalise="fixed")}


if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"  # as tests/conftest.py
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    with tempfile.TemporaryDirectory() as tmp:
        recorded = runs(Path(tmp))
    PATH.write_text(json.dumps({"jax": jax.__version__, "backend": jax.default_backend(),
                                "devices": jax.device_count(), "runs": recorded}, indent=1) + "\n")
    print(f"wrote {PATH}")
