"""PureJaxRL's PPO (`purejaxrl/ppo.py`, Lu et al. 2022) at metadisco's settings: the second peer of `bench --peers`.

PureJaxRL is not a package: its scripts are run from a checkout. So is this peer: `METADISCO_PUREJAXRL` (or `bench
--purejaxrl DIR`) names the folder that holds its `ppo.py` and `wrappers.py` (the repository's `purejaxrl/`), and
its `make_train(config)` runs as written. Three things are adapted, none inside its program:

- its `wrappers.py` imports navix and brax at the top, for its MiniGrid and Brax wrappers, which its discrete PPO
  does not use; where one is not installed, empty modules stand in for it while the file loads;
- gymnax 1.x returns terminated and truncated apart, PureJaxRL's `LogWrapper` expects gymnax's old 5-value step, so
  the env it makes is wrapped in `FiveValueStep` (as for rejax);
- its config is filled from a `TrainConfig`: env count, rollout length, epochs, minibatches, lr and its annealing,
  gradient clip, discount, GAE lambda, loss coefficients, activation; clip 0.2. Its network is fixed at 64 x 64, so
  other hidden sizes are refused.

Its program returns what its `train` returns (the runner state and every step's episode info), as its own scripts do.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from collections.abc import Callable
from pathlib import Path

import jax

from metadisco.bench.rejax import FiveValueStep
from metadisco.core.errors import UserError
from metadisco.trainers.config import TrainConfig

SOURCE_VARIABLE = "METADISCO_PUREJAXRL"
_FILES = ("ppo.py", "wrappers.py")
# What `wrappers.py` imports for the wrappers PPO does not use: package -> {module: names it takes from it}.
_UNUSED_IMPORTS = {"navix": {"navix": ()},
                   "brax": {"brax": (), "brax.envs": (), "brax.envs.wrappers": (),
                            "brax.envs.wrappers.training": ("EpisodeWrapper", "AutoResetWrapper")}}


def source() -> Path | None:
    """The folder `METADISCO_PUREJAXRL` names, or None when it is unset."""
    folder = os.environ.get(SOURCE_VARIABLE)
    return Path(folder) if folder else None


def _missing(folder: Path) -> list[str]:
    return [name for name in _FILES if not (folder / name).is_file()]


def check_source(folder: Path) -> Path:
    """`folder` if it holds PureJaxRL's `ppo.py` and `wrappers.py`; else a one-line `UserError`."""
    missing = _missing(folder)
    if missing:
        raise UserError(f"{SOURCE_VARIABLE} / --purejaxrl: {folder} has no {' or '.join(missing)}; name the purejaxrl/ "
                        "folder of a PureJaxRL checkout (git clone https://github.com/luchris429/purejaxrl)")
    return folder


def available() -> bool:
    folder = source()
    return folder is not None and not _missing(folder)


def fits(config: TrainConfig) -> bool:
    """Whether PureJaxRL's PPO can run `config`: its network is fixed at 64 x 64."""
    return tuple(config.hidden_sizes) == (64, 64)


def _module(folder: Path) -> types.ModuleType:
    """PureJaxRL's ppo.py as a module (its `from wrappers import ...` resolved in its own folder), with its gymnax
    making envs of the old 5-value step."""
    import gymnax

    folder = check_source(folder)
    sys.path.insert(0, str(folder))
    stand_ins = {}
    for package, modules in _UNUSED_IMPORTS.items():
        if package not in sys.modules and importlib.util.find_spec(package) is None:
            for name, attributes in modules.items():
                stand_ins[name] = types.ModuleType(name)
                for attribute in attributes:
                    setattr(stand_ins[name], attribute, None)
    for name, module in stand_ins.items():  # each stand-in an attribute of its parent, as `import a.b` expects
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(stand_ins[parent], child, module)
    sys.modules.update(stand_ins)
    try:
        spec = importlib.util.spec_from_file_location("purejaxrl_ppo", folder / "ppo.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
        for name in stand_ins:
            del sys.modules[name]

    def make(env_id, **kwargs):
        env, params = gymnax.make(env_id, **kwargs)
        return FiveValueStep(env), params

    module.gymnax = types.SimpleNamespace(make=make)
    return module


def purejaxrl_config(env_id: str, config: TrainConfig, clip_eps=0.2) -> dict:
    """PureJaxRL's config dict with `config`'s settings."""
    if not fits(config):
        raise UserError(f"PureJaxRL's network is 64 x 64, this config's is {tuple(config.hidden_sizes)}; compare at "
                        "the classic preset")
    options = config.options
    return {"LR": config.lr, "NUM_ENVS": config.num_envs, "NUM_STEPS": config.num_steps,
            "TOTAL_TIMESTEPS": config.num_updates * config.batch_size, "UPDATE_EPOCHS": options.update_epochs,
            "NUM_MINIBATCHES": options.num_minibatches, "GAMMA": config.gamma, "GAE_LAMBDA": config.gae_lambda,
            "CLIP_EPS": clip_eps, "ENT_COEF": options.ent_coef, "VF_COEF": options.vf_coef,
            "MAX_GRAD_NORM": options.max_grad_norm, "ACTIVATION": config.activation, "ENV_NAME": env_id,
            "ANNEAL_LR": config.anneal_lr, "DEBUG": False}


def purejaxrl_train(env_id: str, config: TrainConfig, folder: Path | None = None) -> Callable:
    """key -> PureJaxRL's output of one PPO run at `config`'s settings."""
    return _module(folder or source()).make_train(purejaxrl_config(env_id, config))


def purejaxrl_population(env_id: str, config: TrainConfig, folder: Path | None = None) -> Callable:
    """(clip_eps [P], keys [P, S]) -> outputs: P PPO variants x S seeds, as PureJaxRL vmaps hyperparameters (a traced
    value in its config dict). The peer of a meta-training generation."""
    module = _module(folder or source())

    def member(clip_eps, keys):
        return jax.vmap(module.make_train(purejaxrl_config(env_id, config, clip_eps)))(keys)

    return jax.vmap(member)
