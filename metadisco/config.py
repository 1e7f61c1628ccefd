"""Trainer configuration: a frozen, hashable dataclass, presets per env family, and `--set` overrides.

The fields split in two (rejax's static / traced split; `metadisco.hyper`). Those named in `Hyper` (learning
rate, gamma, GAE lambda, entropy and value coefficients, gradient clip) fix no shape: the trainer takes them as
a pytree argument, `train(key, meta, hyper)`, so one compiled program serves every value, and sweeps, PBT and
the ES can vary them. The rest fix shapes or the program's structure (env count, rollout length, epochs,
minibatches, network, annealing on or off, normalisation) and are static under `jax.jit` (the config is
hashable). `metadisco.hyper.static_of(config)` blanks the traced fields: the key of a compiled program.
Presets follow PureJaxRL's settings (Lu et al. 2022, github.com/luchris429/purejaxrl).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, NamedTuple

from metadisco.errors import UserError, unknown_name_error
from metadisco.limits import check_trainer_fits
from metadisco.validate import INT32_MAX, check_float, check_int, coerce, is_number, shorten


class Hyper(NamedTuple):
    """The traced settings of the PPO / mirror-learning trainer (`TrainConfig.HYPER`): float32 scalars for one
    agent, [runs] arrays when vmapped over a sweep or a PBT population."""

    lr: Any
    gamma: Any
    gae_lambda: Any
    ent_coef: Any
    vf_coef: Any
    max_grad_norm: Any


@dataclass(frozen=True)
class TrainConfig:
    """Settings of the inner PPO / mirror-learning trainer. The fields named in `HYPER` are traced; in a static
    config (`metadisco.hyper.static_of`) they are None."""

    HYPER: ClassVar[type] = Hyper

    num_envs: int = 4
    num_steps: int = 128
    total_timesteps: int = 500_000
    update_epochs: int = 4
    num_minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    lr: float = 2.5e-4
    anneal_lr: bool = True
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    normalize_obs: bool = False
    normalize_reward: bool = False
    # Fraction of the final updates whose finished episodes define the "final return".
    final_window: float = 0.05
    # Rollout steps per loop iteration in the compiled scan: fewer loop round trips, same numbers.
    rollout_unroll: int = 1

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.batch_size

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    def validate(self) -> TrainConfig:
        """Raise a `UserError` naming the first setting that cannot work; return self otherwise.

        Types, finiteness and ranges are checked for every field (a NaN fails `x <= 0`, so it is tested for
        explicitly); sizes are bounded by int32 (they are loop lengths and array sizes under jit) and, together,
        by this machine's memory (`metadisco.limits`). A static config (every traced field None) has its static
        fields checked; its numbers are checked where they are made (`metadisco.hyper.with_values`)."""
        for name in ("num_envs", "num_steps", "update_epochs", "num_minibatches", "rollout_unroll"):
            if not is_number(getattr(self, name)) or getattr(self, name) <= 0:
                raise UserError(f"{name} must be a positive integer, got {shorten(getattr(self, name))}")
            check_int(name, getattr(self, name), 1, INT32_MAX, "an int32 size under jit")
        if not is_number(self.total_timesteps) or self.total_timesteps <= 0:
            raise UserError(f"timesteps must be positive, got {shorten(self.total_timesteps)}")
        check_int("timesteps", self.total_timesteps, 1)
        if self.num_updates < 1:
            raise UserError(
                f"timesteps {self.total_timesteps} is smaller than one update "
                f"(num_envs x num_steps = {self.batch_size}); use at least {self.batch_size}"
            )
        if self.num_updates > INT32_MAX:
            raise UserError(f"timesteps {shorten(self.total_timesteps)} gives {self.num_updates:,} updates of "
                            f"{self.batch_size} steps; at most {INT32_MAX:,} (the update loop counts in int32)")
        if self.batch_size % self.num_minibatches:
            raise UserError(
                f"num_envs x num_steps = {self.batch_size} must divide by num_minibatches "
                f"= {self.num_minibatches}"
            )
        if not all(getattr(self, name) is None for name in Hyper._fields):
            self._validate_hyper()
        check_float("final_window", self.final_window, 0.0, 1.0, lo_open=True)
        for name in ("anneal_lr", "normalize_obs", "normalize_reward"):
            if not isinstance(getattr(self, name), bool):
                raise UserError(f"{name} must be true or false, got {shorten(getattr(self, name))}")
        if self.activation not in ACTIVATIONS:
            raise unknown_name_error("activation", str(self.activation), ACTIVATIONS)
        if not isinstance(self.hidden_sizes, tuple) or not self.hidden_sizes or any(
                not is_number(h) or h <= 0 for h in self.hidden_sizes):
            raise UserError(f"hidden_sizes must be positive integers, got {shorten(self.hidden_sizes)}")
        for h in self.hidden_sizes:
            check_int("hidden_sizes", h, 1, INT32_MAX, "an int32 size under jit")
        check_trainer_fits(self, 1, "one training run")
        return self

    def _validate_hyper(self) -> None:
        check_float("gamma", self.gamma, 0.0, 1.0, lo_open=True)
        check_float("gae_lambda", self.gae_lambda, 0.0, 1.0)
        for name in ("ent_coef", "vf_coef"):
            check_float(name, getattr(self, name), 0.0)
        for name in ("lr", "max_grad_norm"):
            if is_number(getattr(self, name)) and getattr(self, name) <= 0:
                raise UserError(f"{name} must be positive, got {getattr(self, name)}")
            check_float(name, getattr(self, name), 0.0, lo_open=True)


ACTIVATIONS = ("tanh", "relu")

# Settings that left TrainConfig, and where they went: naming one is a one-line error that says so.
MOVED = {
    "value_clip_eps": "value_clip_eps moved from the trainer settings to the clipped-L2 value loss: give the "
                      "objective `value_loss: {kind: clipped_l2, clip_eps: X}` (a meta-training config's objective "
                      "section, or an objective file) instead",
}


def check_not_moved(key: str) -> None:
    if key in MOVED:
        raise UserError(MOVED[key])

PRESETS: dict[str, TrainConfig] = {
    # CartPole, Acrobot, Pendulum, bsuite, misc: PureJaxRL's CartPole settings.
    "classic": TrainConfig(),
    "minatar": TrainConfig(
        num_envs=64, num_steps=128, total_timesteps=10_000_000, num_minibatches=8, lr=5e-3,
        activation="relu",
    ),
    "brax": TrainConfig(
        num_envs=2048, num_steps=10, total_timesteps=50_000_000, num_minibatches=32, lr=3e-4,
        anneal_lr=False, ent_coef=0.0, hidden_sizes=(256, 256), normalize_obs=True, normalize_reward=True,
    ),
}


def default_preset_name(env_id: str) -> str:
    """The preset an env id gets when none is named."""
    if env_id.startswith("brax/"):
        return "brax"
    if env_id.endswith("-MinAtar"):
        return "minatar"
    return "classic"


def get_preset(name: str) -> TrainConfig:
    if name not in PRESETS:
        raise unknown_name_error("preset", name, list(PRESETS))
    return PRESETS[name]


# ---------------------------------------------------------------------------------------------------------
# overrides ('key=value' from the command line, or a task's `train` section), typed by the field they name


def split_assignment(item: str) -> tuple[str, str]:
    """Split 'key=value' into its two halves, with a clear error when there is no '='."""
    if "=" not in item:
        raise UserError(f"malformed --set {shorten(item)}; expected key=value")
    key, value = item.split("=", 1)
    if not key.strip():
        raise UserError(f"malformed --set {shorten(item)}; the key is empty")
    return key.strip(), value.strip()


def train_setting(key: str, value: typing.Any, label: str | None = None) -> typing.Any:
    """`value` (plain data: YAML, or a --set value read as YAML) as the type of TrainConfig field `key`, by the
    one coercion engine (`metadisco.validate.coerce`); an unknown or moved key is a `UserError`."""
    check_not_moved(key)
    hints = typing.get_type_hints(TrainConfig)
    if key not in hints:
        raise unknown_name_error("setting", key, [f.name for f in fields(TrainConfig)])
    return coerce(value, hints[key], label or key)


def parse_overrides(assignments) -> dict[str, typing.Any]:
    """'key=value' strings -> {field: typed value}; the value is read as YAML, as every --set value is."""
    from metadisco.safe_yaml import load_value

    changes = {}
    for item in assignments:
        key, text = split_assignment(item)
        changes[key] = train_setting(key, load_value(text, f"--set {key}") if text else text)
    return changes


def apply_overrides(config: TrainConfig, overrides) -> TrainConfig:
    """Return `config` with `overrides` applied: 'key=value' strings, or a mapping of typed values (a task's
    `train` section); unknown keys and malformed values are `UserError`s."""
    changes = dict(overrides) if isinstance(overrides, Mapping) else parse_overrides(overrides)
    return replace(config, **changes)


def config_to_dict(config: TrainConfig) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()}
