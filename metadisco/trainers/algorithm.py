"""Algorithms as units: each RL algorithm is one module that registers one `Algorithm` record here.

    from metadisco.trainers.algorithm import get_algorithm
    algo = get_algorithm("dqn")
    trainer = algo.build(config, env, objective)        # metadisco.trainers.make_trainer calls this
    act = algo.mode_action(config, env, objective)      # (params, obs) -> the trained agent's greedy action

A record says everything the rest of the framework asks of an algorithm, so that no code outside the algorithm
modules branches on an algorithm's name (rejax's one class per algorithm; disco_rl's `UpdateRule` with its
handcrafted `actor_critic` beside the learned rules):

- `build(config, env, objective) -> Trainer`: its steppable trainer (`metadisco.trainers.base.Trainer`);
- `mode_action(config, env, objective)`: the trained agent's deterministic action (`metadisco.trainers.greedy`);
- `check_objective(config, objective)`: a `UserError` for an objective it cannot train whole;
- `control`: the built-in objective that is its handcrafted control (the objective at zero meta-parameters, which
  paired fitness and the judges score against); `judge_against`, the built-in objectives a discovery of it is
  judged against by default (its control, and for PPO also DPO, the field's discovered baseline);
- `presets`: {env family: `TrainConfig`}, its settings per family, each number's source beside it in its module;
- `slots`: the objective slots its trainer calls (a learnable piece in another slot would be evolved for nothing:
  `check_calls` refuses it), and `gives_activations`, whether it gives an optimiser the network's activations (OPEN);
- `options`: a frozen dataclass of the algorithm's own settings, carried by `TrainConfig.algorithm_options` (a new
  algorithm adds its settings there, not to `TrainConfig`; another algorithm's config naming one is a one-line error
  that names the algorithms that have it);
- `hyper`: the NamedTuple class of its traced settings (`metadisco.trainers.hyper`): `TrainConfig`'s lr, gamma
  and gae_lambda (`metadisco.trainers.traced.Hyper`, the default), then those of its options that fix no shape
  (PPO's `PPOHyper` adds the entropy and value coefficients and the gradient clip);
- `check_config(config)`: a `UserError` for settings it cannot run;
- `optimizer_steps`: optimiser steps per update, for the learning-rate schedule (`trainer_optimizer`);
- `optimizer(config, OptimizerInputs) -> GradientTransformation`: for an algorithm whose objectives name no
  optimiser (an update rule writes the agent's whole loss), the one its trainer steps; None (every other): the
  objective's optimiser slot;
- `baseline(objective) -> str`: the handcrafted method an objective of it is at zero meta-parameters, as messages
  and paired fitness name it (`baseline_of`): its name in capitals unless the algorithm says otherwise (PPO: its
  drift's, so a `learned_dpo` drift is DPO-normalised; an update rule: the rule's own, "none" for a rule that has
  no handcrafted twin).
- `network_passes(config) -> (forward, backward)`: its network's passes per env step (PPO: one forward pass to act,
  then a forward and a backward pass per epoch), for `metadisco bench`'s hand count of FLOPs and its network-only
  bound; None: not counted;
- `exports_to`: the DiscoBench task whose modules `metadisco export` writes an objective of it into (PPO:
  OnPolicyRL); None: not exportable (`check_exportable`).

The built-in algorithms are the modules named in `BUILTIN_MODULES`, imported on first lookup; a plugin registers
its own with `register`.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from metadisco.core.errors import UserError, unknown_name_error
from metadisco.trainers.traced import COMMON_TRACED, Hyper

# One line per built-in algorithm: the module that registers it.
BUILTIN_MODULES = ("metadisco.trainers.ppo", "metadisco.trainers.pqn", "metadisco.trainers.update_rule",
                   "metadisco.trainers.dqn")

def _accept_any(config, objective) -> None:
    del config, objective


def _any_config(config) -> None:
    del config


def _name_in_capitals(objective) -> str:
    return objective.algorithm.upper()


def _one_step_per_minibatch(config) -> int:
    return config.options.update_epochs * config.options.num_minibatches


@dataclass(frozen=True)
class Algorithm:
    """One RL algorithm, as the framework sees it (this module's docstring says what each field is for)."""

    name: str
    summary: str  # one line, for listings and the API reference
    build: Callable[..., Any]  # (config, env, objective) -> Trainer
    mode_action: Callable[..., Callable]  # (config, env, objective) -> (params, obs) -> action
    control: str  # the built-in objective that is its handcrafted control
    judge_against: tuple[str, ...] = ()  # built-in objectives a discovery is judged against; () -> (control,)
    presets: Mapping[str, Any] = field(default_factory=dict)  # {env family: TrainConfig}
    slots: tuple[str, ...] = ("drift", "value_loss", "optimizer")  # the objective slots its trainer calls
    gives_activations: bool = False  # its trainer gives an optimiser that `needs_context` the network's activations
    options: type | None = None
    hyper: type = Hyper  # the NamedTuple of its traced settings: Hyper's fields, then its traced options
    check_objective: Callable[..., None] = _accept_any
    check_config: Callable[[Any], None] = _any_config  # a UserError for settings it cannot run
    optimizer_steps: Callable[[Any], int] = _one_step_per_minibatch
    optimizer: Callable[..., Any] | None = None  # (config, OptimizerInputs) -> optax transform; None: the objective's
    baseline: Callable[[Any], str] = _name_in_capitals  # objective -> the handcrafted method it is at zero
    network_passes: Callable[[Any], tuple[int, int]] | None = None  # config -> (forward, backward) per env step
    exports_to: str | None = None  # the DiscoBench task an objective of it exports into; None: not exportable

    def preset_name(self, family: str) -> str:
        """The name of its preset for `family`: the family's own name for PPO (the default algorithm), else
        `<algorithm>_<family>`."""
        return family if self.name == DEFAULT_ALGORITHM else f"{self.name}_{family}"

    def baselines(self) -> tuple[str, ...]:
        """The built-in objectives a discovery of this algorithm is judged against by default."""
        return self.judge_against or (self.control,)

    def default_options(self):
        """Its own settings at their defaults (None for an algorithm without any)."""
        return None if self.options is None else self.options()


DEFAULT_ALGORITHM = "ppo"
_ALGORITHMS: dict[str, Algorithm] = {}
_loaded = False


def register_algorithm(algorithm: Algorithm) -> Algorithm:
    """Add `algorithm` to the registry (an algorithm module's last line); registering one name twice is an error."""
    old = _ALGORITHMS.get(algorithm.name)
    if old is not None and old is not algorithm:
        raise ValueError(f"algorithm {algorithm.name!r} registered twice")
    traced = tuple(algorithm.hyper._fields)
    if traced[:len(COMMON_TRACED)] != COMMON_TRACED or not set(traced[len(COMMON_TRACED):]) <= set(
            option_names(algorithm)):
        raise ValueError(f"algorithm {algorithm.name!r}: its hyper's fields must be {', '.join(COMMON_TRACED)}, then "
                         f"options of its own; got {', '.join(traced)}")
    _ALGORITHMS[algorithm.name] = algorithm
    return algorithm


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILTIN_MODULES:
            importlib.import_module(module)


def algorithm_names() -> list[str]:
    """Every registered algorithm's name, the built-ins first, in registration order."""
    _load_builtins()
    return list(_ALGORITHMS)


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm `name`; an unknown name is a one-line `UserError` listing the known ones."""
    _load_builtins()
    if name not in _ALGORITHMS:
        raise unknown_name_error("algorithm", str(name), list(_ALGORITHMS))
    return _ALGORITHMS[name]


register = register_algorithm  # the name the built-in modules use


def all_algorithms() -> list[Algorithm]:
    _load_builtins()
    return list(_ALGORITHMS.values())


def check_calls(algorithm: Algorithm, objective) -> None:
    """A one-line `UserError` for an objective piece that `algorithm`'s trainer would not use: a learnable piece in a
    slot it never calls, or an optimiser that reads activations it does not give."""
    for slot, piece in objective.pieces().items():
        if slot not in algorithm.slots and getattr(piece, "learnable", False):
            raise UserError(f"algorithm {algorithm.name} never calls the {slot.replace('_', ' ')}; the learnable "
                            f"{slot.replace('_', ' ')} {piece.name!r} would be evolved for nothing: use a handcrafted "
                            "one")
    if getattr(objective.optimizer, "needs_context", False) and "optimizer" in algorithm.slots \
            and not algorithm.gives_activations:
        givers = [a.name for a in all_algorithms() if a.gives_activations]
        raise UserError(f"optimizer {objective.optimizer.name!r} reads the network's activations, which only algorithm "
                        f"{' and '.join(givers)} gives it; use it with {givers[0]}, or another optimiser with "
                        f"{algorithm.name}")


def readers(setting: str) -> tuple[str, ...] | None:
    """The algorithms whose own options include `setting` (sorted by name); None for a setting that is no
    algorithm's option (a `TrainConfig` field: every algorithm reads it)."""
    names = tuple(sorted(a.name for a in all_algorithms() if setting in option_names(a)))
    return names or None


def option_names(algorithm: Algorithm) -> tuple[str, ...]:
    return () if algorithm.options is None else tuple(f.name for f in dataclasses.fields(algorithm.options))


def option_owner(name: str) -> Algorithm | None:
    """The first algorithm whose own options include `name`, or None."""
    for algorithm in all_algorithms():
        if name in option_names(algorithm):
            return algorithm
    return None


def not_read_error(setting: str, algorithm: str) -> UserError:
    """The one-line error for a setting that `algorithm` does not read, naming the algorithms that do."""
    owners = readers(setting) or ("?",)
    names = owners[0] if len(owners) == 1 else f"{', '.join(owners[:-1])} and {owners[-1]}"
    return UserError(f"{setting} is a setting of algorithm {names}, not of {algorithm}; leave it out, or use "
                     f"algorithm={owners[0]}")


def presets() -> dict[str, Any]:
    """{preset name: TrainConfig} of every registered algorithm's presets."""
    return {a.preset_name(family): config for a in all_algorithms() for family, config in a.presets.items()}


def baseline_of(objective) -> str:
    """The handcrafted method `objective` is at zero meta-parameters (`Algorithm.baseline`): the control paired
    fitness scores every member against ("PPO" for LPO / TA-LPO and learned value losses or optimisers, "DPO" for a
    `dpo` or `learned_dpo` drift, "PQN" / "DQN" for a TD objective, the rule's own for an update rule, "none" where
    there is no handcrafted twin)."""
    return get_algorithm(objective.algorithm).baseline(objective)


def describe_baseline(objective) -> str:
    """`baseline_of` in words, naming where it differs from the method's own: a learned value loss is a residual
    around plain L2, not PPO's clipped L2, so its zero point is "PPO with an L2 value loss"."""
    baseline = baseline_of(objective)
    return f"{baseline} with an L2 value loss" if objective.value_loss.name == "learned" else baseline


def check_exportable(objective, label: str) -> None:
    """A one-line `UserError` when `objective`'s algorithm has no export (`Algorithm.exports_to`)."""
    algorithm = get_algorithm(objective.algorithm)
    if algorithm.exports_to is None:
        exporters = [a.name for a in all_algorithms() if a.exports_to is not None]
        raise UserError(f"{label} is trained by algorithm {algorithm.name}, which has no export: export writes "
                        f"policy-optimisation objectives (drift, value loss, optimiser) for {' and '.join(exporters)}")


def require_discrete(algorithm: str, spec) -> None:
    """A one-line `UserError` when `spec` (an env's `EnvSpec`) has continuous actions."""
    if not spec.discrete:
        raise UserError(f"{spec.env_id} has continuous actions ({spec.describe_actions()}); algorithm {algorithm} "
                        "needs discrete actions (use algorithm ppo)")
