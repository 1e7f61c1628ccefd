"""The tiny meta-training config the meta-training, bad-input and process tests share (its compiled
programs are cached across them), and readers of a run directory's metrics."""

import copy
import json

TINY = {
    "objective": {"drift": {"kind": "lpo", "hidden": 8}},
    "tasks": [{"env": "CartPole-v1", "timesteps": 256, "seeds": 1,
               "train": {"num_envs": 4, "num_steps": 16, "hidden_sizes": [8, 8], "num_minibatches": 2,
                         "update_epochs": 2, "lr": 0.01}}],
    "strategy": {"name": "Open_ES", "population_size": 4, "sigma_init": 0.1, "lr": 0.05},
    "generations": 2,
    "eval_every": 100,
    "held_out_envs": ["Acrobot-v1"],
}


def tiny(**changes) -> dict:
    config = copy.deepcopy(TINY)
    for key, value in changes.items():
        if key.startswith("strategy_"):
            config["strategy"][key[len("strategy_"):]] = value
        else:
            config[key] = value
    return config


def read_metrics(out) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def fitness_columns(lines):
    keys = ("generation", "fitness_mean", "fitness_max", "fitness_min", "nan_count", "fitness_of_mean")
    return [{k: line.get(k) for k in keys} for line in lines]
