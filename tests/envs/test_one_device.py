"""Brax envs train on one device: two XLA host devices running brax physics at the preset's 2048 envs stop
making progress (every thread waits; seen with jax 0.10.2), so every command that shards runs keeps a brax env
on one device, and meta-training gives a brax task its own one-device mesh beside the other tasks' full one."""

import jax
import numpy as np
import pytest
from tiny_meta import tiny

from metadisco import BUILTIN_OBJECTIVES, parse_config, resolve_config
from metadisco.core.errors import UserError
from metadisco.envs import devices_for_env
from metadisco.meta.loop import meta_train
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


@pytest.mark.heavy
@pytest.mark.slow  # 71 s on 2 cores
def test_meta_training_a_brax_task_beside_a_gymnax_task_on_two_devices():
    config = tiny(generations=1, eval_every=1)
    brax_task = {"env": "brax/inverted_pendulum", "timesteps": 64, "seeds": 1,
                 "train": {"num_envs": 4, "num_steps": 8, "hidden_sizes": [8, 8], "num_minibatches": 2,
                           "update_epochs": 1}}
    config["tasks"] = [*config["tasks"], brax_task]
    config["sampling"] = {"tasks_per_generation": 0}  # every task, every generation
    mesh = make_mesh(jax.devices()[:2])
    step = GenerationStep(parse_config(config), mesh=mesh)
    cartpole, brax = step.problem.tasks
    assert cartpole.mesh.devices.size == 2 and brax.mesh.devices.size == 1
    result = meta_train(parse_config(config), None, mesh=mesh, progress=False)
    assert result.generations_done == 1 and np.isfinite(result.fitness_of_final_mean)


def test_a_brax_task_in_a_multi_process_run_is_refused(monkeypatch):
    config = tiny()
    config["tasks"][0]["env"] = "brax/hopper"
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    with pytest.raises(UserError, match="brax.*multi-process run"):
        GenerationStep(parse_config(config), mesh=make_mesh(jax.devices()[:2]))
