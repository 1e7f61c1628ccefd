"""A researcher's own module, as a plugin (tests/core/test_plugins.py loads it): one drift and one env.

`scaled_ppo` is PPO's drift times exp(w), one meta-parameter w: at w = 0 it is PPO exactly, and for every w
it is a valid drift (>= 0, and 0 wherever PPO's is, so 0 with zero slope at r = 1).
"""

from dataclasses import dataclass

import jax.numpy as jnp

from metadisco.envs import register_env
from metadisco.objectives import DRIFTS, DriftInputs, Piece, Progress
from metadisco.objectives.drift import ppo_drift


@DRIFTS.register("scaled_ppo")
@dataclass(frozen=True)
class ScaledPPODrift(Piece):
    eps: float = 0.2
    positive_options = ("eps",)

    def zero_meta(self) -> dict:
        return {"w": jnp.zeros((), jnp.float32)}

    def __call__(self, meta, inputs: DriftInputs, progress: Progress):
        del progress
        return ppo_drift(inputs.ratio, inputs.advantage, self.eps) * jnp.exp(meta["w"])


@register_env("PluginCartPole-v0")
def plugin_cartpole():
    from metadisco.envs.gymnax_adapter import GymnaxEnv

    return GymnaxEnv("CartPole-v1")
