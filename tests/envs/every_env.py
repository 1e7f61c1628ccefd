"""Every env `metadisco envs` lists as available trains a few updates of PPO and runs the random policy (the
zero point of normalised scores), so a listed env never fails at `metadisco train`. brax envs compile for tens
of seconds to minutes each, so the envs are split over three test files (gymnax and plugins; brax in two
halves) that pytest-xdist's `--dist loadfile` can give to different processes; the settings are the smallest the
trainer accepts. This module holds the one check; test_every_env_*.py choose the envs.

The random policy runs on every gymnax env but on one brax env per half: for brax its program differs from
env to env only in the physics step, which training each env already compiles and runs through the same
vectorised wrapper (`make_vec_env`), and every brax env shares one action space kind (a box in [-1, 1]). Each
brax random-policy run costs as much compilation as the training run (hopper: 23 s against 27 s alone)."""

import jax
import numpy as np
import pytest

from metadisco.cli.envs_cmd import describe
from metadisco.envs.registry import env_ids
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.runs.random_policy import random_policy_return
from metadisco.runs.seeds import resolve_config, train_seeds

# Listed as unavailable, with the reason `metadisco envs` prints: MNISTBandit-bsuite downloads MNIST when built,
# which needs the network. Any other env that fails to build fails this test instead of being skipped.
KNOWN_UNAVAILABLE = {"MNISTBandit-bsuite"}
# The brax envs that also run the random policy, one per half of `share`.
BRAX_RANDOM_POLICY = {"brax/inverted_double_pendulum", "brax/inverted_pendulum"}
TINY = {"num_envs": 2, "num_steps": 4, "num_minibatches": 1, "update_epochs": 1, "hidden_sizes": (8,)}


def share(part: str) -> list[str]:
    """The listed env ids of one test file: "gymnax" (every non-brax id), "brax_a" / "brax_b" (alternate brax
    ids, so the two halves cost about the same)."""
    brax = [e for e in env_ids() if e.startswith("brax/")]
    if part == "gymnax":
        return [e for e in env_ids() if not e.startswith("brax/")]
    return brax[0::2] if part == "brax_a" else brax[1::2]


def check_env_trains_and_runs_the_random_policy(env_id):
    """Train `env_id` a few updates (losses finite) and return the random policy's mean return (None for the brax
    envs outside `BRAX_RANDOM_POLICY`)."""
    spec, reason = describe(env_id)
    if spec is None:
        assert env_id in KNOWN_UNAVAILABLE, f"{env_id} is listed as unavailable: {reason}"
        pytest.skip(f"listed as unavailable: {reason}")
    config = resolve_config(env_id, overrides=TINY, timesteps=2 * 4 * 2)
    ppo = BUILTIN_OBJECTIVES["ppo"]
    result = train_seeds(env_id, ppo, ppo.zero_meta(), config, 1, 0, jax.local_devices()[:1])
    assert result.metrics.losses["actor_loss"].shape == (1, 2)
    for loss in result.metrics.losses.values():
        assert np.isfinite(np.asarray(loss)).all(), env_id
    if env_id.startswith("brax/") and env_id not in BRAX_RANDOM_POLICY:
        return None
    return random_policy_return(env_id, num_envs=2, num_steps=8, max_chunks=1)
