"""Environments: one registry over gymnax and brax, one interface, and vectorised wrappers."""

from metadisco.envs.core import Env, EnvSpec, EnvStep, VecEnv
from metadisco.envs.registry import (
    ONE_DEVICE_WHY,
    check_env_id,
    devices_for_env,
    env_ids,
    env_spec,
    make_env,
    make_vec_env,
    register_env,
    runs_on_one_device,
    split_budget,
)

__all__ = ["Env", "EnvSpec", "EnvStep", "ONE_DEVICE_WHY", "VecEnv", "check_env_id", "devices_for_env", "env_ids",
           "env_spec", "make_env", "split_budget", "make_vec_env", "register_env", "runs_on_one_device"]
