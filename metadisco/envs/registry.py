"""One registry of environment ids over gymnax, brax (`brax/<name>`), LPG's gridworlds (`gridworld/<mode>`), Craftax
(`craftax/<id>`, when the optional `craftax` extra is installed) and plugins' own envs.

gymnax's and brax's ids are read from those packages. A plugin (`metadisco.core.plugins`) adds an env with

    @register_env("MyEnv-v0")
    def my_env() -> Env: ...        # a factory of a single, auto-resetting `metadisco.envs.Env`
"""

from __future__ import annotations

import functools

from metadisco.core.errors import UserError, unknown_name_error
from metadisco.envs.core import EnvSpec, VecEnv
from metadisco.envs.craftax_adapter import CRAFTAX_PREFIX
from metadisco.envs.wrappers import ClipAction, LogEpisodes, NormalizeObservation, NormalizeReward

BRAX_PREFIX = "brax/"
GRIDWORLD_PREFIX = "gridworld/"
_REGISTERED: dict[str, object] = {}  # env id -> factory, from register_env


# Brax's physics stops making progress when two XLA host devices run it at once: with the preset's 2048 envs
# every thread of the process waits (`block_until_ready` never returns; 256 envs run), seen with jax 0.10.2 on
# XLA:CPU in `train`, `evaluate` and the calibration map. Until that is understood a brax env trains on one device.
ONE_DEVICE_WHY = "brax envs train on one device here (XLA:CPU hangs when two host devices run brax physics)"


def runs_on_one_device(env_id: str) -> bool:
    """Whether `env_id` trains on one device only (`ONE_DEVICE_WHY`)."""
    return env_id.startswith(BRAX_PREFIX)


def devices_for_env(env_id: str, devices):
    """The devices `env_id` may train on: `devices`, or only the first for an env that runs on one device."""
    return list(devices)[:1] if runs_on_one_device(env_id) else list(devices)


def register_env(env_id: str):
    """Decorator: register `factory() -> Env` under `env_id` (not a gymnax or brax id)."""

    def decorate(factory):
        if env_id in _REGISTERED and _REGISTERED[env_id] is not factory:
            raise ValueError(f"env {env_id!r} registered twice")
        if env_id.startswith((BRAX_PREFIX, GRIDWORLD_PREFIX)) or env_id in gymnax_ids():
            raise ValueError(f"env {env_id!r} is a gymnax, brax or gridworld id already")
        _REGISTERED[env_id] = factory
        return factory

    return decorate


def registered_ids() -> tuple[str, ...]:
    """Ids of envs registered by plugins (installed plugins' entry points are loaded first)."""
    from metadisco.core.plugins import load_entry_points

    load_entry_points()
    return tuple(sorted(_REGISTERED))


@functools.cache
def gymnax_ids() -> tuple[str, ...]:
    import gymnax

    return tuple(gymnax.registered_envs)


@functools.cache
def brax_ids() -> tuple[str, ...]:
    from metadisco.envs.brax_adapter import brax_envs

    envs = brax_envs()
    return tuple(BRAX_PREFIX + name for name in sorted(envs._envs))  # brax keeps no public list


def gridworld_ids() -> tuple[str, ...]:
    """`gridworld/<mode>` of LPG's gridworlds (`metadisco.envs.gridworld`)."""
    from metadisco.envs.gridworld import MODES

    return tuple(GRIDWORLD_PREFIX + name for name in sorted(MODES))


@functools.cache
def craftax_ids() -> tuple[str, ...]:
    """`craftax/<id>` of Craftax's symbolic envs, if the `craftax` extra is installed; else none."""
    from metadisco.envs.craftax_adapter import CRAFTAX_IDS, CRAFTAX_PREFIX, available

    return tuple(CRAFTAX_PREFIX + name for name in CRAFTAX_IDS) if available() else ()


def env_ids() -> tuple[str, ...]:
    """Every known env id: gymnax's ids as gymnax spells them, then `brax/<name>`, `gridworld/<mode>`,
    `craftax/<id>` (when installed), then plugins' envs."""
    return gymnax_ids() + brax_ids() + gridworld_ids() + craftax_ids() + registered_ids()


def split_budget(spec: str) -> tuple[str, int | None]:
    """'ID' or 'ID@TIMESTEPS' (an env with its own training budget, e.g. 'Breakout-MinAtar@500000') ->
    (ID, TIMESTEPS or None). The id is not checked here; TIMESTEPS must be a positive integer."""
    from metadisco.core.errors import UserError

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
    elif env_id.startswith(GRIDWORLD_PREFIX):
        if env_id not in gridworld_ids():
            raise unknown_name_error("env", env_id, gridworld_ids())
    elif env_id.startswith(CRAFTAX_PREFIX):
        from metadisco.envs.craftax_adapter import CRAFTAX_IDS, available

        if not available():
            raise UserError(f"env {env_id!r} needs Craftax, which is not installed: pip install -e '.[craftax]'")
        if env_id not in craftax_ids():
            raise unknown_name_error("env", env_id, craftax_ids() or tuple(CRAFTAX_PREFIX + i for i in CRAFTAX_IDS))
    elif env_id not in gymnax_ids() and env_id not in registered_ids():
        raise unknown_name_error("env", env_id, env_ids())
    return env_id


@functools.cache
def make_env(env_id: str, brax_backend: str | None = None, episode_length: int = 1000):
    """The single, auto-resetting `Env` for `env_id` (cached: gymnax / brax construction is not free)."""
    check_env_id(env_id)
    if env_id in _REGISTERED:
        return _REGISTERED[env_id]()
    if env_id.startswith(GRIDWORLD_PREFIX):
        from metadisco.envs.gridworld import GridWorld

        return GridWorld(env_id[len(GRIDWORLD_PREFIX):])
    if env_id.startswith(CRAFTAX_PREFIX):
        from metadisco.envs.craftax_adapter import CraftaxEnv

        return CraftaxEnv(env_id, env_id[len(CRAFTAX_PREFIX):])
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
