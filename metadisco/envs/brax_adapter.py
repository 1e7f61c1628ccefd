"""brax environments behind the `Env` interface, keeping time-limit truncation apart from termination.

brax's own training wrappers fold the time limit into `done` and record `truncation` in `state.info`; here the
episode step counter is ours, so `truncated` is exact and the final observation is kept for bootstrapping.
Like brax's `AutoResetWrapper`, a finished episode restarts from the state this env was first reset to (a
fresh reset every step would cost a physics initialisation per step, because `vmap` turns `cond` into both
branches).

Some brax envs return the reward or done flag as a Python number (inverted_pendulum's reward is `1.0`); every
step's reward and done are made float32 arrays before use. brax 0.14's fluid model (the swimmer's only: the one
env with a viscous medium) calls `jnp.clip(x, a_min=...)`, a keyword the pinned JAX no longer accepts;
`_patch_brax_fluid_clip` points that one module's `jp` at jax.numpy with the old keywords translated, and does
nothing where JAX still takes them.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import sys
import types
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from metadisco.envs.core import EnvSpec, EnvStep

# What mujoco (4.0) prints on stdout when its optional warp backend is not installed: not a fault of the command
# being run, and it would open `metadisco envs | head` and make a one-line error three lines.
_IMPORT_NOISE = ("Failed to import warp:", "Failed to import mujoco_warp:")


def brax_envs():
    """`brax.envs`, imported quietly: what the import prints on stdout is dropped if it is mujoco's notice that
    the optional warp backend is missing, and sent to stderr otherwise (stdout carries only the command's own)."""
    if "brax.envs" not in sys.modules:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            import brax.envs  # noqa: F401
        for line in printed.getvalue().splitlines():
            if line.strip() and not line.startswith(_IMPORT_NOISE):
                print(line, file=sys.stderr)
    return sys.modules["brax.envs"]


def _clip_with_old_keywords(x, min=None, max=None, *, a_min=None, a_max=None):  # noqa: A002 (numpy's names)
    """`jnp.clip` that also takes numpy's old `a_min` / `a_max` keywords."""
    return jnp.clip(x, a_min if min is None else min, a_max if max is None else max)


def _patch_brax_fluid_clip() -> None:
    """Let brax.fluid's `jp.clip(..., a_min=...)` run under a JAX whose `clip` dropped `a_min` (JAX 0.8+).
    Only `brax.fluid`'s own name `jp` changes; jax.numpy itself and every other module are untouched."""
    if "a_min" in inspect.signature(jnp.clip).parameters:
        return
    from brax import fluid

    if isinstance(fluid.jp, types.SimpleNamespace):  # patched already
        return
    fluid.jp = types.SimpleNamespace(**{name: getattr(jnp, name) for name in dir(jnp) if not name.startswith("__")})
    fluid.jp.clip = _clip_with_old_keywords


def _as_float32(state):
    """`state` with reward and done as float32 arrays (some brax envs return Python numbers)."""
    return state.replace(reward=jnp.asarray(state.reward, jnp.float32), done=jnp.asarray(state.done, jnp.float32))


class BraxEnvState(NamedTuple):
    state: Any  # brax.envs.base.State
    first: Any  # the state episodes restart from
    time: jax.Array


class BraxEnv:
    def __init__(self, env_id: str, name: str, episode_length: int = 1000, backend: str | None = None):
        envs = brax_envs()
        _patch_brax_fluid_clip()
        kwargs = {"backend": backend} if backend else {}
        self.env = envs.get_environment(name, **kwargs)
        self.episode_length = episode_length
        size = int(self.env.action_size)
        # brax's own `observation_size` runs `reset` op by op, compiling hundreds of small programs (30 s for Ant
        # on a CPU); its shape alone needs no computation.
        observation = jax.eval_shape(self.env.reset, jax.random.PRNGKey(0)).obs
        self.spec = EnvSpec(env_id, (int(observation.shape[-1]),), False, size, (-1.0,) * size, (1.0,) * size)

    def reset(self, key):
        state = _as_float32(self.env.reset(key))
        return state.obs.astype(jnp.float32), BraxEnvState(state, state, jnp.zeros((), jnp.int32))

    def step(self, key, env_state: BraxEnvState, action):
        del key  # brax dynamics are deterministic given the action
        nxt = _as_float32(self.env.step(env_state.state, action))
        time = env_state.time + 1
        terminated = nxt.done > 0.5
        truncated = jnp.logical_and(time >= self.episode_length, jnp.logical_not(terminated))
        done = jnp.logical_or(terminated, truncated)
        restart = jax.tree.map(lambda a, b: jnp.where(done, a, b), env_state.first, nxt)
        # The restarted state must not carry a done flag into the next step.
        restart = restart.replace(done=jnp.zeros_like(nxt.done))
        new = BraxEnvState(restart, env_state.first, jnp.where(done, 0, time))
        return new, EnvStep(
            obs=restart.obs.astype(jnp.float32),
            reward=nxt.reward.astype(jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_obs=nxt.obs.astype(jnp.float32),
            info={},
        )
