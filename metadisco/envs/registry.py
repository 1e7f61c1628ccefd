"""One registry of environment ids over gymnax and brax (`brax/<name>`)."""

from __future__ import annotations

import functools

from metadisco.envs.core import EnvSpec, VecEnv
from metadisco.envs.wrappers import ClipAction, LogEpisodes, NormalizeObservation, NormalizeReward
from metadisco.errors import unknown_name_error

BRAX_PREFIX = "brax/"


@functools.cache
def gymnax_ids() -> tuple[str, ...]:
    import gymnax

    return tuple(gymnax.registered_envs)


@functools.cache
def brax_ids() -> tuple[str, ...]:
    from brax import envs

    return tuple(BRAX_PREFIX + name for name in sorted(envs._envs))  # brax keeps no public list


def env_ids() -> tuple[str, ...]:
    """Every known env id: gymnax's ids as gymnax spells them, then `brax/<name>`."""
    return gymnax_ids() + brax_ids()


def split_budget(spec: str) -> tuple[str, int | None]:
    """'ID' or 'ID@TIMESTEPS' (an env with its own training budget, e.g. 'Breakout-MinAtar@500000') ->
    (ID, TIMESTEPS or None). The id is not checked here; TIMESTEPS must be a positive integer."""
    from metadisco.errors import UserError

    env_id, at, budget = spec.rpartition("@")
    if not at:
        return spec, None
    try:
        value = float(budget)
    except ValueError:
        value = -1.0
    if not value.is_integer() or value <= 0 or value > 1e12:
        raise UserError(f"env {spec!r}: the budget after '@' must be a positive whole number of env steps "
                        f"(at most 1e12), e.g. {env_id}@500000")
    return env_id, int(value)


def check_env_id(env_id: str) -> str:
    """Return `env_id` if known, else raise a `UserError` naming the closest known ids."""
    if env_id.startswith(BRAX_PREFIX):
        if env_id not in brax_ids():
            raise unknown_name_error("env", env_id, brax_ids())
    elif env_id not in gymnax_ids():
        raise unknown_name_error("env", env_id, env_ids())
    return env_id


@functools.cache
def make_env(env_id: str, brax_backend: str | None = None, episode_length: int = 1000):
    """The single, auto-resetting `Env` for `env_id` (cached: gymnax / brax construction is not free)."""
    check_env_id(env_id)
    if env_id.startswith(BRAX_PREFIX):
        from metadisco.envs.brax_adapter import BraxEnv

        return BraxEnv(env_id, env_id[len(BRAX_PREFIX):], episode_length, brax_backend)
    from metadisco.envs.gymnax_adapter import GymnaxEnv

    return GymnaxEnv(env_id)


def env_spec(env_id: str) -> EnvSpec:
    return make_env(env_id).spec


def make_vec_env(env, num_envs: int, *, normalize_obs: bool, normalize_reward: bool, gamma: float):
    """`num_envs` copies of `env` with logging (on raw rewards), action clipping and normalisation."""
    vec = LogEpisodes(VecEnv(env, num_envs))
    if not env.spec.discrete:
        vec = ClipAction(vec)
    if normalize_obs:
        vec = NormalizeObservation(vec)
    if normalize_reward:
        vec = NormalizeReward(vec, gamma)
    return vec
