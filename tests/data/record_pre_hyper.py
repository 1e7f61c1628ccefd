"""Records the exact metrics of tiny runs, to check that making hyperparameters traced (issue 14) changed no
number. Run once on the code before that change (`PYTHONPATH=OLD_TREE python tests/data/record_pre_hyper.py`);
tests/trainers/test_hyper.py recomputes the same runs with `runs()` and compares bit for bit.

The runs cover the paths the hyperparameters reach: a sharded seed batch (`train_seeds`, 4 CPU devices, CartPole,
annealed lr), and one jitted run of a continuous env with observation and reward normalisation (gamma inside the
reward normaliser), a constant lr and no entropy bonus (Pendulum).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PATH = Path(__file__).with_name("pre_hyper.json")


def runs(traced: bool = False) -> dict[str, dict[str, list[str]]]:
    """{run: {metric: [float.hex() of each value]}}: the recorded numbers, as exact text. `traced`: run the
    Pendulum config as a static program with its hyperparameters as an argument (only after issue 14); else
    with `make_train(config, ...)(key, meta)`, the call that works before and after."""
    import jax
    import numpy as np

    from metadisco.envs import make_env
    from metadisco.objectives import BUILTIN_OBJECTIVES
    from metadisco.runs.seeds import train_seeds
    from metadisco.trainers import make_train
    from metadisco.trainers.config import TrainConfig, apply_overrides
    from metadisco.trainers.metrics import named_numbers

    # Settings by name (`apply_overrides`), so that the script runs on the code it recorded and on the current one.
    tiny = apply_overrides(TrainConfig(), dict(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 6, update_epochs=2,
                                               num_minibatches=2, hidden_sizes=(8, 8)))
    ppo, dpo = BUILTIN_OBJECTIVES["ppo"], BUILTIN_OBJECTIVES["dpo"]

    def exact(metrics) -> dict[str, list[str]]:
        return {name: [float(x).hex() for x in np.asarray(value, np.float64).ravel()]
                for name, value in named_numbers(metrics).items()}

    out = {"cartpole_seeds": exact(train_seeds("CartPole-v1", ppo, ppo.zero_meta(), tiny, 5, seed=3).metrics)}
    pendulum = apply_overrides(tiny, dict(num_steps=50, total_timesteps=4 * 50 * 4, normalize_obs=True,
                                          normalize_reward=True, anneal_lr=False, ent_coef=0.0, lr=3e-4, vf_coef=0.25,
                                          max_grad_norm=1.0))
    if traced:
        from metadisco.trainers.hyper import hyper_of, static_of

        result = jax.jit(make_train(static_of(pendulum), make_env("Pendulum-v1"), dpo))(
            jax.random.PRNGKey(1), dpo.zero_meta(), hyper_of(pendulum))
    else:
        result = jax.jit(make_train(pendulum, make_env("Pendulum-v1"), dpo))(jax.random.PRNGKey(1), dpo.zero_meta())
    out["pendulum_dpo"] = exact(result.metrics)
    return out


if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    record = {"jax": jax.__version__, "backend": jax.default_backend(), "runs": runs()}
    PATH.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {PATH}")
