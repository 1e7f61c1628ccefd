"""metadisco: discover reinforcement-learning objectives by evolution, in JAX.

The public API, for scripts and notebooks (the README's examples and `results/` use only these names):

    objectives   Objective, BUILTIN_OBJECTIVES, resolve_objective (a built-in name or an objective file),
                 load_objective, save_objective, Progress, DRIFTS, VALUE_LOSSES, OPTIMIZERS, UPDATE_RULES
    training     TrainConfig, train_config (a config with settings by name), get_preset, Algorithm,
                 get_algorithm, register_algorithm, make_trainer, make_train, hyper_of, static_of (traced /
                 static settings), train_seeds, resolve_config, seed_keys,
                 final_return, mean_return, make_env, random_policy_return
    meta         load_config, parse_config, meta_train, GenerationStep, measure_baselines, RunDir
    evaluation   evaluate, stats (IQM, bootstrap CIs, P(X > Y))
    set-up       use_all_cores (one XLA device per CPU core; call before the first JAX computation)

Names are imported on first use (PEP 562), so `import metadisco` stays cheap and starts no JAX backend. The
package's layers (core -> rl / envs / parallel / figures -> objectives -> trainers -> runs -> meta / search /
evaluate -> analysis -> bench / cli) are listed in the README's "Where things live".
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

_PUBLIC = {
    # objectives
    "Objective": "metadisco.objectives",
    "BUILTIN_OBJECTIVES": "metadisco.objectives",
    "Progress": "metadisco.objectives",
    "DRIFTS": "metadisco.objectives",
    "VALUE_LOSSES": "metadisco.objectives",
    "OPTIMIZERS": "metadisco.objectives",
    "UPDATE_RULES": "metadisco.objectives",
    "TRACES": "metadisco.objectives",
    "Piece": "metadisco.objectives.registry",
    "DriftInputs": "metadisco.objectives.registry",
    "ValueLossInputs": "metadisco.objectives.registry",
    "OptimizerInputs": "metadisco.objectives.registry",
    "TraceInputs": "metadisco.objectives.registry",
    "UpdateRuleInputs": "metadisco.objectives.registry",
    "load_objective": "metadisco.objectives",
    "save_objective": "metadisco.objectives",
    "resolve_objective": "metadisco.objectives.resolve",
    # training
    "TrainConfig": "metadisco.trainers.config",
    "train_config": "metadisco.trainers.config",
    "get_preset": "metadisco.trainers.config",
    "Algorithm": "metadisco.trainers.algorithm",
    "get_algorithm": "metadisco.trainers.algorithm",
    "register_algorithm": "metadisco.trainers.algorithm",
    "make_trainer": "metadisco.trainers",
    "make_train": "metadisco.trainers",
    "hyper_of": "metadisco.trainers.hyper",
    "static_of": "metadisco.trainers.hyper",
    "final_return": "metadisco.trainers.metrics",
    "mean_return": "metadisco.trainers.metrics",
    "train_seeds": "metadisco.runs.seeds",
    "resolve_config": "metadisco.runs.seeds",
    "seed_keys": "metadisco.runs.seeds",
    "random_policy_return": "metadisco.runs.random_policy",
    "make_env": "metadisco.envs",
    "register_env": "metadisco.envs",
    "EnvSpec": "metadisco.envs",
    "EnvStep": "metadisco.envs",
    # meta-training
    "load_config": "metadisco.meta.load",
    "parse_config": "metadisco.meta.load",
    "meta_train": "metadisco.meta.loop",
    "GenerationStep": "metadisco.meta.step",
    "MetaProblem": "metadisco.meta.problem",
    "measure_baselines": "metadisco.meta.baselines",
    "RunDir": "metadisco.runs.rundir",
    # evaluation
    "evaluate": "metadisco.evaluate",
    "stats": "metadisco.core",
    # set-up
    "use_all_cores": "metadisco.parallel.devices",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'metadisco' has no attribute {name!r}")
    module = importlib.import_module(_PUBLIC[name])
    # A name that is a module of its package (`stats`) is imported as one.
    value = getattr(module, name) if hasattr(module, name) else importlib.import_module(f"{_PUBLIC[name]}.{name}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
