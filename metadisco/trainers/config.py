"""Trainer configuration: a frozen, hashable dataclass, presets per env family and algorithm, and `--set`
overrides.

The fields split in two (rejax's static / traced split; `metadisco.trainers.hyper`). Those named in `Hyper` (learning
rate, gamma, GAE lambda, entropy and value coefficients, gradient clip) fix no shape: the trainer takes them as
a pytree argument, `train(key, meta, hyper)`, so one compiled program serves every value, and sweeps, PBT and
the ES can vary them. The rest fix shapes or the program's structure (env count, rollout length, epochs,
minibatches, network, annealing on or off, normalisation) and are static under `jax.jit` (the config is
hashable). `metadisco.trainers.hyper.static_of(config)` blanks the traced fields: the key of a compiled program.
`algorithm` names the trainer: a registered algorithm (`metadisco.trainers.algorithm`: PPO / mirror learning,
the default, PQN, DQN, a learned update rule's). Each algorithm's module holds its presets, each number's source
beside it, and says which of the fields read by only some algorithms it reads (`Algorithm.reads`): under another
algorithm such a field must keep its default. An algorithm's own static settings that no other reads live in its
module (`Algorithm.options`) and travel in `algorithm_options`; `--set NAME=VALUE` and a task's `train` section
address them by name like any field.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, NamedTuple

from metadisco.core.coerce import INT32_MAX, check_float, check_int, coerce, is_number
from metadisco.core.errors import UserError, shorten, unknown_name_error
from metadisco.core.limits import check_trainer_fits
from metadisco.core.schema import Settings, mapping_section, split_assignment


class Hyper(NamedTuple):
    """The traced settings of the inner trainer (`TrainConfig.HYPER`): float32 scalars for one agent, [runs]
    arrays when vmapped over a sweep or a PBT population. PQN reads lr, gamma, gae_lambda and max_grad_norm;
    ent_coef and vf_coef are PPO's own (PQN carries and ignores them)."""

    lr: Any
    gamma: Any
    gae_lambda: Any
    ent_coef: Any
    vf_coef: Any
    max_grad_norm: Any


@dataclass(frozen=True)
class TrainConfig:
    """Settings of the inner trainer: PPO / mirror learning, or PQN (`algorithm`). The fields named in `HYPER`
    are traced; in a static config (`metadisco.trainers.hyper.static_of`) they are None.

    The fields are what every algorithm has (env and rollout sizes, gamma, `gae_lambda`: the lambda of the returns,
    GAE's for PPO, Q(lambda)'s for PQN; learning rate and its annealing, network sizes, normalisation) and a few that
    several read (`ent_coef`, `vf_coef`: PPO's; epochs, minibatches and gradient clipping: PPO's and PQN's; each
    algorithm lists those it reads in `Algorithm.reads`). An algorithm's own settings are its `Algorithm.options`,
    carried in `algorithm_options`. Setting another algorithm's setting is an error, not silently ignored.
    """

    HYPER: ClassVar[type] = Hyper

    algorithm: str = "ppo"
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
    # Rollout steps per loop iteration in the compiled scan; 0: by the platform the program is built for
    # (`metadisco.trainers.base.rollout_unroll`: 8 on a GPU, 1 on a CPU). Unrolled steps fuse differently, so the
    # numbers differ in their last bits (and a run's path with them) from the loop of one step.
    rollout_unroll: int = 0
    # Deterministic evaluation episodes each trained agent plays after training (its mode; DiscoBench's and OPEN's
    # score, `metadisco.trainers.greedy`), reported as `Metrics.eval_return` and the `eval_return` fitness. 0: none.
    eval_episodes: int = 0
    # The algorithm's own settings (`Algorithm.options`: PQN's and DQN's epsilon schedule, DQN's replay and target
    # network, an update rule's replay), as sorted (name, value) pairs of those that differ from their defaults; read
    # them as `config.options`.
    algorithm_options: tuple[tuple[str, Any], ...] = ()

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

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    def validate(self) -> TrainConfig:
        """Raise a `UserError` naming the first setting that cannot work; return self otherwise.

        Types, finiteness and ranges are checked for every field (a NaN fails `x <= 0`, so it is tested for
        explicitly); sizes are bounded by int32 (they are loop lengths and array sizes under jit) and, together,
        by this machine's memory (`metadisco.core.limits`). A static config (every traced field None) has its static
        fields checked; its numbers are checked where they are made (`metadisco.trainers.hyper.with_values`)."""
        for name in ("num_envs", "num_steps", "update_epochs", "num_minibatches"):
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
        from metadisco.trainers.algorithm import get_algorithm, not_read_error, option_names, readers

        if self.algorithm not in (a := _algorithm_names()):
            raise unknown_name_error("algorithm", str(self.algorithm), a)
        algorithm = get_algorithm(self.algorithm)
        if self.batch_size % self.num_minibatches and "num_minibatches" in algorithm.reads:
            raise UserError(
                f"num_envs x num_steps = {self.batch_size} must divide by num_minibatches "
                f"= {self.num_minibatches}"
            )
        if not all(getattr(self, name) is None for name in Hyper._fields):
            self._validate_hyper()
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
        for name in OPTIONAL_FIELDS:
            owners = readers(name)
            if owners and self.algorithm not in owners and getattr(self, name) is not None \
                    and getattr(self, name) != getattr(DEFAULT, name):
                raise not_read_error(name, self.algorithm)
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
MAX_EVAL_EPISODES = 4096
# The fields that only some algorithms read (each algorithm lists those it reads in `Algorithm.reads`); a config's
# record (`config_to_dict`) holds those its algorithm reads.
OPTIONAL_FIELDS = ("ent_coef", "vf_coef", "update_epochs", "num_minibatches", "max_grad_norm")
DEFAULT = TrainConfig()


def unread_fields(algorithm: str) -> frozenset[str]:
    """The `OPTIONAL_FIELDS` that `algorithm` does not read (`Algorithm.reads`), which its record leaves out; none
    for a name not registered (a plugin not loaded), whose record is then kept whole."""
    from metadisco.trainers.algorithm import get_algorithm

    try:
        return frozenset(OPTIONAL_FIELDS) - set(get_algorithm(algorithm).reads)
    except UserError:
        return frozenset()


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
    defaults = {} if algorithm.options is None else dataclasses.asdict(algorithm.options())
    return tuple(sorted((k, v) for k, v in options.items() if k not in defaults or defaults[k] != v))


def config_to_dict(config: TrainConfig) -> dict:
    """The config as plain data (its record in eval.json, plans, summaries and baseline-cache keys): the fields its
    algorithm reads (of `OPTIONAL_FIELDS`, only those in `Algorithm.reads`: DQN's record has no entropy
    coefficient), its own options beside them; `eval_episodes` appears only when set. Records written by older
    versions are read through `metadisco.runs.migrate`."""
    unread = unread_fields(config.algorithm)
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
           if k != "algorithm_options" and k not in unread}
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
