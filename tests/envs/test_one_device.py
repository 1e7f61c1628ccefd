"""Brax envs train on one device: two XLA host devices running brax physics at the preset's 2048 envs stop
making progress (every thread waits; seen with jax 0.10.2), so every command that shards runs keeps a brax env
on one device, and meta-training refuses a brax task on several devices with a one-line error."""

import jax
import pytest
from tiny_meta import tiny

from metadisco import BUILTIN_OBJECTIVES, parse_config, resolve_config
from metadisco.core.errors import UserError
from metadisco.envs import devices_for_env
from metadisco.meta.step import GenerationStep
from metadisco.parallel.sharding import make_mesh
from metadisco.runs.seeds import seeds_program


@pytest.mark.parametrize("env_id", ["brax/hopper", "brax/ant", "CartPole-v1", "Breakout-MinAtar"])
def test_devices_for_env(env_id):
    devices = ["d0", "d1", "d2"]
    expected = devices[:1] if env_id.startswith("brax/") else devices
    assert devices_for_env(env_id, devices) == expected


def test_brax_seeds_are_not_split_over_devices():
    assert len(jax.local_devices()) >= 2  # conftest gives the suite several host devices
    ppo = BUILTIN_OBJECTIVES["ppo"]
    for env_id, used in (("brax/hopper", 1), ("CartPole-v1", 2)):
        config = resolve_config(env_id, overrides=["num_envs=4", "num_steps=4", "num_minibatches=2"], timesteps=32)
        _, _, devices = seeds_program(env_id, ppo, ppo.zero_meta(), config, 2, 0, jax.local_devices()[:2])
        assert len(devices) == used, env_id


def test_meta_training_a_brax_task_on_two_devices_is_refused():
    config = tiny()
    config["tasks"][0]["env"] = "brax/hopper"
    with pytest.raises(UserError, match="brax.*--devices 1"):
        GenerationStep(parse_config(config), mesh=make_mesh(jax.devices()[:2]))
