"""Registries of objective pieces by name (drifts, value losses, optimisers), the slots' call shape, and plugins.

A piece is a frozen dataclass: its fields are static settings (sizes, constants), hashable so the trainer
can be compiled once per piece; its meta-parameters are a separate pytree (`zero_meta()`), empty for a
handcrafted piece. Register a new piece with the decorator and it is usable everywhere by name; a
researcher's own module does the same and is loaded as a plugin (`metadisco.core.plugins`).

Every slot is called the same way, `piece(meta, inputs, progress)`:

    drift(meta, DriftInputs(ratio, advantage), progress)              -> drift, the batch shape of ratio
    value_loss(meta, ValueLossInputs(value, old_value, target), progress) -> per-sample loss, same shape
    optimizer(meta, OptimizerInputs(learning_rate, max_grad_norm, total_steps), progress)
                                                                      -> an optax GradientTransformation
                  (one with `needs_context` takes `update(..., context=OptimizerContext(...))`)
    trace(meta, TraceInputs(lam, greedy_next), progress)              -> lambda per step, the shape of greedy_next

The trace slot is the TD trainer's (PQN's): the lambda with which Q(lambda) mixes the bootstrap and the longer
return at each step. An objective that has one is a TD objective (`Objective.algorithm`).

The update-rule slot is a whole learning rule (DiscoRL's, LPG's): it reads a batch of time-ordered trajectories
and the agent's outputs on them and says what the agent's outputs should be, carrying a state of its own across
the agent's updates; its trainer is `metadisco.trainers.update_rule`. It is called differently (`UpdateRule`):

    rule(meta, UpdateRuleInputs(...), state)   -> (targets, next state)
    rule.loss(inputs, agent_out, targets)      -> per-step loss [T, B] of the agent's outputs against the targets

`meta` is the piece's own meta-parameter subtree, `progress` where training is (`Progress`; the optimiser is
built once, before the first update, and sees the number of updates). The Protocols below state it for type
checkers and readers; `Piece` is the base the built-ins use.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax

from metadisco.core.errors import UserError, shorten, unknown_name_error

Meta = Any  # a piece's meta-parameters: nested dicts of float32 arrays ({} for a handcrafted piece)


class Progress(NamedTuple):
    """Where training is: update n of N. Both scalars (traced inside the trainer)."""

    fraction: jax.Array  # n / N in [0, 1)
    num_updates: jax.Array  # N, as float32


class DriftInputs(NamedTuple):
    ratio: jax.Array  # r = pi_new / pi_old, any batch shape
    advantage: jax.Array  # normalised advantage A, same shape


class ValueLossInputs(NamedTuple):
    value: jax.Array  # the critic's new prediction (a TD trainer's: Q(s, a))
    old_value: jax.Array  # its prediction at rollout time (DQN's: the target network's Q(s, a))
    target: jax.Array  # the GAE return (a TD trainer's: its TD target)
    # A one-step TD trainer's (DQN's) parts of the target, target = r + discount * next_value; None from trainers
    # whose targets are multi-step (PPO's GAE, PQN's Q(lambda)).
    next_value: jax.Array | None = None  # max_a Q_target(s', a), the bootstrap's value
    discount: jax.Array | None = None  # gamma (1 - terminated)


class TraceInputs(NamedTuple):
    lam: jax.Array  # the trainer's lambda (PQN's own choice), a scalar
    greedy_next: jax.Array  # [T, N] 1.0 where the action taken at step t + 1 was greedy (the last step: 1.0)


class OptimizerInputs(NamedTuple):
    learning_rate: Any  # a float or an optax schedule of the gradient step count
    max_grad_norm: float
    total_steps: int  # gradient steps in the whole run


class OptimizerContext(NamedTuple):
    """What an optimiser that declares `needs_context = True` gets at each step besides (grads, state, params), as
    the keyword argument `context` of its `optax.GradientTransformationExtraArgs.update`. The trainer builds it
    only for such an optimiser (OPEN, `metadisco.objectives.open_optimizer`); others never see or cost it.

    activations, actor_mask and layer_proportion are pytrees with the params' structure; actor_mask and
    layer_proportion hold Python numbers (static: the network's layout, not traced).
    """

    activations: Any  # per leaf: its layer's mean |activation| per unit over the minibatch, [units] ([1]: none)
    actor_mask: Any  # per leaf: 1.0 on the actor's parameters, 0.0 on the critic's
    layer_proportion: Any  # per leaf: i / (L - 1), its layer's place in its own tower (actor or critic)
    training_proportion: jax.Array  # update n / (N - 1) (0 when N = 1)
    batch_proportion: jax.Array  # this step's epoch e / (E - 1) within the update (0 when E = 1)
    key: jax.Array  # this step's own randomness (e.g. OPEN's actor noise)


class UpdateRuleInputs(NamedTuple):
    """One learner step's batch for an update rule, time first: B trajectories of T steps (T + 1 observations)."""

    actions: jax.Array  # [T+1, B] int32; the last is used only for the agent's own next-step outputs
    rewards: jax.Array  # [T, B] r_t, after a_t
    is_terminal: jax.Array  # [T, B] bool: the episode ended after a_t
    behaviour_logits: jax.Array  # [T+1, B, A] the policy that acted, when it acted
    agent_out: dict  # the agent's outputs on the T+1 observations, {"logits": [T+1, B, A], ...}, no gradient
    target_out: dict  # the same under the agent's target (Polyak-averaged) parameters
    discount: jax.Array  # a scalar: the trainer's gamma
    lam: jax.Array  # a scalar: the trainer's lambda (gae_lambda)
    progress: Progress  # where the agent's training is (TA-LPG reads it)


@runtime_checkable
class LearnedPiece(Protocol):
    """What every piece has besides its call: a name, its baseline point and the ES's start point."""

    name: str

    def zero_meta(self) -> Meta: ...

    def start_meta(self, key: jax.Array, scale: float) -> Meta: ...


class Drift(LearnedPiece, Protocol):
    def __call__(self, meta: Meta, inputs: DriftInputs, progress: Progress) -> jax.Array: ...


class ValueLoss(LearnedPiece, Protocol):
    def __call__(self, meta: Meta, inputs: ValueLossInputs, progress: Progress) -> jax.Array: ...


class Optimizer(LearnedPiece, Protocol):
    def __call__(self, meta: Meta, inputs: OptimizerInputs, progress: Progress) -> Any: ...  # GradientTransformation


class Trace(LearnedPiece, Protocol):
    def __call__(self, meta: Meta, inputs: TraceInputs, progress: Progress) -> jax.Array: ...


class UpdateRule(LearnedPiece, Protocol):
    """A learned update rule (disco_rl's one update-rule interface, as pure functions): the agent network whose
    outputs it trains, its state across updates, its targets and the agent's loss against them. `target_coeff`:
    the Polyak weight with which the agent's target parameters follow its parameters after each step;
    `uses_target`: whether it reads the agent's outputs under them (else `target_out` is `agent_out`). The agent
    module may take the actions taken as a second argument, `module(obs, actions)`: the trainer then passes them,
    and only the outputs `loss` reads are differentiated (DiscoRL's agent gives its heads at those actions alone)."""

    target_coeff: float
    uses_target: bool

    def agent(self, num_actions: int, torso: tuple[int, ...], activation: str) -> Any: ...  # a flax Module

    def init_state(self) -> Any: ...

    def __call__(self, meta: Meta, inputs: UpdateRuleInputs, state: Any) -> tuple[Any, Any]: ...

    def loss(self, inputs: UpdateRuleInputs, agent_out: dict, targets: Any) -> jax.Array: ...


class Registry:
    """The pieces of one objective slot by name (`DRIFTS`, `VALUE_LOSSES`, `OPTIMIZERS`, `TRACES`, `UPDATE_RULES`).

    `@REGISTRY.register("name")` adds a piece class; `names()` lists them; `make(name, **options)` builds one with
    its options checked. The API reference lists each registry's entries.
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._pieces: dict[str, type] = {}

    def register(self, name: str):
        def decorate(cls):
            if name in self._pieces and self._pieces[name] is not cls:
                old = self._pieces[name]
                raise ValueError(f"{self.kind} {name!r} registered twice ({old.__module__}.{old.__qualname__} "
                                 f"and {cls.__module__}.{cls.__qualname__})")
            cls.name = name
            self._pieces[name] = cls
            return cls

        return decorate

    def names(self) -> list[str]:
        return sorted(self._pieces)

    def __repr__(self) -> str:
        return f"<{self.kind} registry: {', '.join(self.names())}>"

    def get(self, name: str) -> type:
        if name not in self._pieces:
            from metadisco.core.plugins import load_entry_points

            load_entry_points()  # an installed package's pieces, registered on first need
        if name not in self._pieces:
            raise unknown_name_error(self.kind, name, self.names())
        return self._pieces[name]

    def make(self, name: str, **options: Any):
        """An instance of piece `name` with `options`; unknown options are a `UserError`."""
        from metadisco.core.limits import check_meta_parameters
        from metadisco.objectives.options import check_options, meta_parameter_count

        cls = self.get(name)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise UserError(f"{self.kind} {name!r} has no option {shorten(unknown[0])}; "
                            f"options: {', '.join(sorted(known)) or 'none'}")
        piece = cls(**check_options(f"{self.kind} {name!r}", cls, options))
        check_meta_parameters(meta_parameter_count(piece), f"{self.kind} {name!r}")
        return piece


DRIFTS = Registry("drift")
VALUE_LOSSES = Registry("value loss")
OPTIMIZERS = Registry("optimizer")
TRACES = Registry("trace")
UPDATE_RULES = Registry("update rule")


class Piece:
    """Base of every objective piece: handcrafted by default (no meta-parameters)."""

    name = "?"
    positive_options: tuple[str, ...] = ()  # float options that must be > 0 (checked when the piece is made)
    # Whether the piece reads the run length N (`Progress.num_updates`), not only the progress n / N; then
    # meta-training notes the evaluation envs whose N its training tasks do not cover (`metadisco.meta.horizon`).
    sees_horizon: bool = False
    # A value loss's: whether it reads the one-step TD target's parts (`ValueLossInputs.next_value`, `.discount`),
    # which only a one-step TD trainer (DQN) gives; its figure is drawn against the TD error at fixed Q.
    reads_target_parts: bool = False
    # A drift's: the handcrafted method it equals at zero meta-parameters, which paired fitness is relative to
    # and meta-training's messages name (`metadisco.trainers.algorithm.baseline_of`).
    baseline: str = "PPO"
    # An optimiser's: whether its update needs the trainer's `OptimizerContext` (activations, epoch, ...).
    needs_context: bool = False

    def zero_meta(self) -> Meta:
        """The meta-parameters at which this piece equals its handcrafted baseline."""
        return {}

    def start_meta(self, key: jax.Array, scale: float) -> Meta:
        """The ES's start point (`start: hidden`): by default the baseline itself, `zero_meta()`. A piece whose
        baseline is a saddle of its network (two or more weight layers, all zero) overrides this to draw the
        hidden layers at random (scale `scale`) and keep the output layer at zero, so that it still *is* the
        baseline but the ES can leave it at first order (see `metadisco.meta.start`)."""
        del key, scale
        return self.zero_meta()

    def options(self) -> dict:
        """{option: value}, every dataclass field (a file written before an option existed reads it at its
        default)."""
        return dataclasses.asdict(self)

    @property
    def plugin(self) -> str | None:
        """The module a piece from a plugin was defined in (None for metadisco's own pieces)."""
        module = type(self).__module__
        return None if module == "metadisco" or module.startswith("metadisco.") else module

    @property
    def learnable(self) -> bool:
        return bool(jax.tree.leaves(self.zero_meta()))
