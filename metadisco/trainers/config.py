"""Trainer configuration: a frozen, hashable dataclass of what every algorithm has, each algorithm's own settings
beside it, presets per env family and algorithm, and `--set` overrides.

`TrainConfig`'s fields are what every algorithm reads: env and rollout sizes, the budget, gamma, the returns'
lambda, the learning rate and its annealing, the network, normalisation, evaluation. `algorithm` names the trainer,
a registered algorithm (`metadisco.trainers.algorithm`: PPO / mirror learning, the default, PQN, DQN, a learned
update rule's), and an algorithm's own settings are its options (`Algorithm.options`, a frozen dataclass in its
module: PPO's epochs, minibatches, entropy and value coefficients and gradient clip; DQN's replay and target
network), carried in `algorithm_options` and read as `config.options`. `--set NAME=VALUE`, a task's `train` section
and `config.setting(NAME)` address a field and an option alike; setting an option the algorithm does not have is a
one-line error naming the algorithm that has it.

The settings also split in two another way (rejax's static / traced split; `metadisco.trainers.hyper`). Those named
in the algorithm's `Algorithm.hyper` (every algorithm's lr, gamma and returns' lambda, and its own traced options:
PPO's entropy and value coefficients, a gradient clip) fix no shape: the trainer takes them as a pytree argument,
`train(key, meta, hyper)`, so one compiled program serves every value, and sweeps, PBT and the ES can vary them. The
rest fix shapes or the program's structure and are static under `jax.jit` (the config is hashable).
`metadisco.trainers.hyper.static_of(config)` blanks the traced settings: the key of a compiled program. Each
algorithm's module holds its presets, each number's source beside it.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from metadisco.core.coerce import INT32_MAX, check_float, check_int, coerce, is_number
from metadisco.core.errors import UserError, shorten, unknown_name_error
from metadisco.core.limits import check_trainer_fits
from metadisco.core.schema import Settings, mapping_section, split_assignment


@dataclass(frozen=True)
class EpochOptions:
    """The settings of an algorithm that learns from each rollout in epochs of shuffled minibatches
    (`metadisco.rl.sgd`; PPO's and PQN's options extend it), and clips its gradient's global norm (traced)."""

    update_epochs: int = 4
    num_minibatches: int = 4
    max_grad_norm: float | None = 0.5

    def validate(self) -> None:
        for name in ("update_epochs", "num_minibatches"):
            if not is_number(getattr(self, name)) or getattr(self, name) <= 0:
                raise UserError(f"{name} must be a positive integer, got {shorten(getattr(self, name))}")
            check_int(name, getattr(self, name), 1, INT32_MAX, "an int32 size under jit")
        check_positive("max_grad_norm", self.max_grad_norm)


def check_minibatches(config: TrainConfig) -> None:
    """The rollout's `num_envs x num_steps` samples split into `num_minibatches` equal minibatches (an
    `EpochOptions` algorithm's `check_config`)."""
    if config.batch_size % config.options.num_minibatches:
        raise UserError(f"num_envs x num_steps = {config.batch_size} must divide by num_minibatches "
                        f"= {config.options.num_minibatches}")


def check_positive(name: str, value: Any) -> None:
    """A traced setting that must be positive and finite (None: a static config's blank, checked where its values
    are made)."""
    if value is None:
        return
    if is_number(value) and value <= 0:
        raise UserError(f"{name} must be positive, got {value}")
    check_float(name, value, 0.0, lo_open=True)


def check_non_negative(name: str, value: Any) -> None:
    """A traced setting that must be finite and >= 0 (None: a static config's blank)."""
    if value is not None:
        check_float(name, value, 0.0)


@dataclass(frozen=True)
class TrainConfig:
    """Settings of the inner trainer (the module docstring): what every algorithm has, and the algorithm's own
    options in `algorithm_options`. The traced ones (`Algorithm.hyper`) are None in a static config
    (`metadisco.trainers.hyper.static_of`).

    The fields: env and rollout sizes, gamma, `gae_lambda` (the lambda of the returns: GAE's for PPO, Q(lambda)'s for
    PQN), learning rate and its annealing, network sizes, normalisation, evaluation. Build a config with options by
    name through `apply_overrides` (`train_config(**settings)` from the defaults).
    """

    algorithm: str = "ppo"
    num_envs: int = 4
    num_steps: int = 128
    total_timesteps: int = 500_000
    gamma: float = 0.99
    gae_lambda: float = 0.95
    lr: float = 2.5e-4
    anneal_lr: bool = True
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    normalize_obs: bool = False
    normalize_reward: bool = False
    # Fraction of the final updates whose finished episodes define the "final return".
    final_window: float = 0.05
    # Rollout steps per loop iteration in the compiled scan; 0: by the platform the program is built for
    # (`metadisco.trainers.base.rollout_unroll`: 8 on a GPU, 1 on a CPU). Unrolled steps fuse differently, so the
    # numbers differ in their last bits (and a run's path with them) from the loop of one step.
    rollout_unroll: int = 0
    # Deterministic evaluation episodes each trained agent plays after training (its mode; DiscoBench's and OPEN's
    # score, `metadisco.trainers.greedy`), reported as `Metrics.eval_return` and the `eval_return` fitness. 0: none.
    eval_episodes: int = 0
    # The algorithm's own settings (`Algorithm.options`: PPO's epochs and coefficients, PQN's and DQN's epsilon
    # schedule, DQN's replay and target network, an update rule's replay), as sorted (name, value) pairs of those
    # that differ from their defaults; read them as `config.options`.
    algorithm_options: tuple[tuple[str, Any], ...] = ()

    def setting(self, name: str) -> Any:
        """The value of setting `name`: a field's, or one of the algorithm's options (an `AttributeError` for a
        name that is neither)."""
        if name in FIELD_NAMES:
            return getattr(self, name)
        options = self.options
        if options is None or not hasattr(options, name):
            raise AttributeError(f"algorithm {self.algorithm} has no setting {name!r}")
        return getattr(options, name)

    def with_settings(self, changes: Mapping[str, Any]) -> TrainConfig:
        """This config with settings by name (fields and options alike) replaced: `apply_overrides`."""
        return apply_overrides(self, changes)

    @property
    def options(self):
        """The algorithm's own settings (its `Algorithm.options` dataclass, `algorithm_options` applied), or None
        for an algorithm without any."""
        from metadisco.trainers.algorithm import get_algorithm

        algorithm = get_algorithm(self.algorithm)
        if algorithm.options is None:
            return None
        return algorithm.options(**dict(self.algorithm_options))

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.batch_size

    def validate(self) -> TrainConfig:
        """Raise a `UserError` naming the first setting that cannot work; return self otherwise.

        Types, finiteness and ranges are checked for every field (a NaN fails `x <= 0`, so it is tested for
        explicitly); sizes are bounded by int32 (they are loop lengths and array sizes under jit) and, together,
        by this machine's memory (`metadisco.core.limits`). A static config (every traced field None) has its static
        fields checked; its numbers are checked where they are made (`metadisco.trainers.hyper.with_values`)."""
        for name in ("num_envs", "num_steps"):
            if not is_number(getattr(self, name)) or getattr(self, name) <= 0:
                raise UserError(f"{name} must be a positive integer, got {shorten(getattr(self, name))}")
            check_int(name, getattr(self, name), 1, INT32_MAX, "an int32 size under jit")
        if not is_number(self.rollout_unroll) or self.rollout_unroll < 0:
            raise UserError(f"rollout_unroll must be a non-negative integer (0: by platform), got "
                            f"{shorten(self.rollout_unroll)}")
        check_int("rollout_unroll", self.rollout_unroll, 0, INT32_MAX, "an int32 size under jit")
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
        from metadisco.trainers.algorithm import get_algorithm, not_read_error, option_names

        if self.algorithm not in (a := _algorithm_names()):
            raise unknown_name_error("algorithm", str(self.algorithm), a)
        algorithm = get_algorithm(self.algorithm)
        if self.gamma is not None:  # the traced fields: None in a static config
            check_float("gamma", self.gamma, 0.0, 1.0, lo_open=True)
        if self.gae_lambda is not None:
            check_float("gae_lambda", self.gae_lambda, 0.0, 1.0)
        check_positive("lr", self.lr)
        check_float("final_window", self.final_window, 0.0, 1.0, lo_open=True)
        if not is_number(self.eval_episodes) or self.eval_episodes < 0:
            raise UserError(f"eval_episodes must be a whole number >= 0, got {shorten(self.eval_episodes)}")
        check_int("eval_episodes", self.eval_episodes, 0, MAX_EVAL_EPISODES, "episodes played at once")
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
        if not isinstance(self.algorithm_options, tuple) or not all(
                isinstance(p, tuple) and len(p) == 2 for p in self.algorithm_options):
            raise UserError(f"algorithm_options must be (name, value) pairs, got {shorten(self.algorithm_options)}")
        own = option_names(algorithm)
        for name, _ in self.algorithm_options:
            if name not in own:
                raise not_read_error(name, self.algorithm)
        if algorithm.options is not None:
            options = self.options
            if hasattr(options, "validate"):
                options.validate()
        algorithm.check_config(self)
        check_trainer_fits(self, 1, "one training run")
        return self


ACTIVATIONS = ("tanh", "relu")
MAX_EVAL_EPISODES = 4096
FIELD_NAMES = frozenset(f.name for f in fields(TrainConfig))
DEFAULT = TrainConfig()


def train_config(**settings) -> TrainConfig:
    """A config from the defaults with `settings` by name, the algorithm's options among them (`apply_overrides`):
    `train_config(num_envs=4, update_epochs=2)`; not validated."""
    return apply_overrides(DEFAULT, settings)


def _algorithm_names() -> list[str]:
    from metadisco.trainers.algorithm import algorithm_names

    return algorithm_names()

# Settings that left TrainConfig, and where they went: naming one is a one-line error that says so.
MOVED = {
    "value_clip_eps": "value_clip_eps moved from the trainer settings to the clipped-L2 value loss: give the "
                      "objective `value_loss: {kind: clipped_l2, clip_eps: X}` (a meta-training config's objective "
                      "section, or an objective file) instead",
}


def check_not_moved(key: str) -> None:
    if key in MOVED:
        raise UserError(MOVED[key])

def family_of(env_id: str) -> str:
    """The env family whose presets an env id gets: brax, minatar, craftax, or classic (everything else)."""
    if env_id.startswith("brax/"):
        return "brax"
    if env_id.endswith("-MinAtar"):
        return "minatar"
    if env_id.startswith("craftax/"):
        return "craftax"
    return "classic"


def default_preset_name(env_id: str, algorithm: str = "ppo") -> str:
    """The preset an env id gets when none is named: its family's, for `algorithm` (`Algorithm.presets`)."""
    from metadisco.trainers.algorithm import get_algorithm

    algo = get_algorithm(algorithm)
    family = family_of(env_id)
    if family not in algo.presets:
        raise UserError(f"algorithm {algorithm} has no preset for {env_id} ({family} envs); presets: "
                        f"{', '.join(algo.preset_name(f) for f in algo.presets)}")
    return algo.preset_name(family)


def preset_names() -> list[str]:
    """Every preset's name: each registered algorithm's, in registration order."""
    from metadisco.trainers.algorithm import presets

    return list(presets())


def get_preset(name: str) -> TrainConfig:
    """The preset `name` (`preset_names()`): an algorithm's settings for one env family, each number's source
    beside it in the algorithm's module. PPO's are named by the family (`classic`, `minatar`, `brax`, `craftax`),
    every other algorithm's `<algorithm>_<family>` (`pqn_minatar`, `dqn_classic`, `update_rule_classic`); the API
    reference's table lists them all. An unknown name is a one-line `UserError` naming the presets."""
    from metadisco.trainers.algorithm import presets

    known = presets()
    if name not in known:
        raise unknown_name_error("preset", name, list(known))
    return known[name]


# ---------------------------------------------------------------------------------------------------------
# overrides ('key=value' from the command line, or a task's `train` section), typed by the field they name


def train_setting(key: str, value: typing.Any, label: str | None = None) -> typing.Any:
    """`value` (plain data: YAML, or a --set value read as YAML) as the type of TrainConfig field `key`, or of an
    algorithm's own option `key` (`Algorithm.options`), by the one coercion engine (`metadisco.core.coerce.coerce`);
    an unknown or moved key is a `UserError`."""
    from metadisco.trainers.algorithm import all_algorithms, option_names, option_owner

    check_not_moved(key)
    hints = typing.get_type_hints(TrainConfig)
    if key in hints and key != "algorithm_options":
        return coerce(value, hints[key], label or key)
    owner = option_owner(key)
    if owner is None:
        known = [f.name for f in fields(TrainConfig) if f.name != "algorithm_options"]
        known += [n for a in all_algorithms() for n in option_names(a)]
        raise unknown_name_error("setting", key, known)
    return coerce(value, typing.get_type_hints(owner.options)[key], label or key)


def parse_overrides(assignments) -> dict[str, typing.Any]:
    """'key=value' strings -> {field: typed value}; the value is read as YAML, as every --set value is."""
    from metadisco.core.safe_yaml import load_value

    changes = {}
    for item in assignments:
        key, text = split_assignment(item)
        changes[key] = train_setting(key, load_value(text, f"--set {key}") if text else text)
    return changes


def apply_overrides(config: TrainConfig, overrides) -> TrainConfig:
    """Return `config` with `overrides` applied: 'key=value' strings, or a mapping of typed values (a task's
    `train` section); unknown keys and malformed values are `UserError`s."""
    from metadisco.trainers.algorithm import get_algorithm, option_names

    changes = dict(overrides) if isinstance(overrides, Mapping) else parse_overrides(overrides)
    field_names = {f.name for f in fields(TrainConfig)}
    own = {k: changes.pop(k) for k in list(changes) if k not in field_names}
    config = replace(config, **changes)
    if not own and not config.algorithm_options:
        return config
    options = {**dict(config.algorithm_options), **own}
    try:
        algorithm = get_algorithm(config.algorithm)
    except UserError:
        return config  # validate() names the unknown algorithm
    if "algorithm" in changes:  # another algorithm's options are not carried over to this one
        options = {k: v for k, v in options.items() if k in option_names(algorithm) or k in own}
    return replace(config, algorithm_options=canonical_options(algorithm, options))


def canonical_options(algorithm, options: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """`options` as `TrainConfig.algorithm_options`: sorted (name, value) pairs of those that differ from the
    algorithm's defaults, so that two configs of one program are equal (a compiled program's key). A name the
    algorithm lacks is kept, for `TrainConfig.validate` to name."""
    return own_options(algorithm.options, **options)


def own_options(options_class: type | None, **options) -> tuple[tuple[str, Any], ...]:
    """`options` as `TrainConfig.algorithm_options` for an algorithm whose options are `options_class` (a preset's
    `algorithm_options=own_options(PPOOptions, num_minibatches=8)`): the sorted pairs that differ from its
    defaults."""
    defaults = {} if options_class is None else dataclasses.asdict(options_class())
    return tuple(sorted((k, v) for k, v in options.items() if k not in defaults or defaults[k] != v))


def config_to_dict(config: TrainConfig) -> dict:
    """The config as plain data (its record in eval.json, plans, summaries and baseline-cache keys): its fields, then
    its algorithm's options (DQN's record has no entropy coefficient); `eval_episodes` appears only when set. Records
    written by older versions are read through `metadisco.runs.migrate`."""
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
           if k != "algorithm_options"}
    if not out["eval_episodes"]:
        del out["eval_episodes"]
    if config.options is not None:
        out.update(plain_options(config.options))
    return out


def plain_options(options) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(options).items()}


def train_settings(value: Any, path: str) -> Settings:
    """A task's `train` section: TrainConfig fields typed by their annotations (an unknown key is an error)."""
    mapping = mapping_section(value, path)
    return Settings({str(k): train_setting(str(k), v, f"{path}.{k}") for k, v in mapping.items()}, mapping)
