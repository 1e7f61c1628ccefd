"""An objective: one drift, one value loss and one optimiser (and, for TD learning, a trace), or one learned update
rule, with one meta-parameter pytree.

`Objective` is hashable (static under jit); its meta-parameters are the dict
{"drift": ..., "value_loss": ..., "optimizer": ...}, each entry empty for a handcrafted piece. A TD objective
(PQN's) also has a `trace` slot, and {"trace": ...} in its meta-parameters: an objective without one is a
policy-optimisation objective, as every objective before the trace slot existed, and its files are unchanged.
An objective names the algorithm that trains it (`algorithm`, `metadisco.trainers.algorithm`); one that names
none is inferred from its slots (`inferred_algorithm`): a trace slot means PQN, which uses the value loss (as its
TD loss), the optimiser and the trace, and has no policy, so no use for the drift. DQN's objectives name theirs
(`algorithm: {kind: dqn}` in a spec).

An update-rule objective (`update_rule: {kind: disco}`) is the rule alone: the rule writes the agent's whole loss,
so it has no drift, value loss or optimiser (its trainer, `metadisco.trainers.update_rule`, is algorithm
"update_rule"), and its meta-parameters are {"update_rule": ...}.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field
from typing import Any

from metadisco.core.errors import UserError, shorten
from metadisco.core.schema import plain_data
from metadisco.objectives.registry import DRIFTS, OPTIMIZERS, TRACES, UPDATE_RULES, VALUE_LOSSES, Piece

PIECE_REGISTRIES = {"drift": DRIFTS, "value_loss": VALUE_LOSSES, "optimizer": OPTIMIZERS, "trace": TRACES,
                    "update_rule": UPDATE_RULES}


@dataclass(frozen=True)
class Objective:
    """An RL objective: the pieces an algorithm's trainer calls, one per slot, each equal to its handcrafted baseline
    at zero meta-parameters (`zero_meta`).

    drift:       mirror learning's drift (PPO's clip by default; LPO / TA-LPO learnable), read by PPO.
    value_loss:  the critic's or TD loss (PPO's clipped L2 by default).
    optimizer:   builds the optax optimiser (Adam by default; OPEN and learned optimisers learnable).
    trace:       a TD objective's lambda per step (PQN's); None for policy optimisation.
    update_rule: a learned update rule (Disco103, LPG) that replaces every other piece; None otherwise.
    algorithm:   the registered algorithm that trains it (`metadisco.get_algorithm`); "" infers it from the slots.

    `Objective.from_spec({"drift": {"kind": "lpo"}})` builds one from plain data; `BUILTIN_OBJECTIVES` holds the
    handcrafted ones by name.
    """

    drift: Piece = field(default_factory=lambda: DRIFTS.make("ppo"))
    value_loss: Piece = field(default_factory=lambda: VALUE_LOSSES.make("clipped_l2"))
    optimizer: Piece = field(default_factory=lambda: OPTIMIZERS.make("adam"))
    trace: Piece | None = None  # a TD objective's (PQN's) lambda per step; None for policy optimisation
    update_rule: Piece | None = None  # a learned update rule, which replaces every other piece
    # The algorithm that trains it (`metadisco.trainers.algorithm`); "" infers it from the slots
    # (`inferred_algorithm`), so that every objective file written before objectives named theirs reads the same.
    algorithm: str = ""

    def __post_init__(self):
        if not isinstance(self.algorithm, str):
            raise UserError(f"an objective's algorithm must be a name, got {shorten(self.algorithm)}")
        if not self.algorithm:
            object.__setattr__(self, "algorithm", self.inferred_algorithm())
        if self.update_rule is not None:
            others = [slot for slot, piece in (("drift", self.drift), ("value_loss", self.value_loss),
                                               ("optimizer", self.optimizer), ("trace", self.trace))
                      if piece != _default_piece(slot)]
            if others:
                raise UserError(f"an objective with an update_rule is the rule alone (it writes the agent's whole "
                                f"loss and steps its own optimiser); leave out its {others[0]} slot")

    def pieces(self) -> dict[str, Piece]:
        if self.update_rule is not None:
            return {"update_rule": self.update_rule}
        pieces = {"drift": self.drift, "value_loss": self.value_loss, "optimizer": self.optimizer}
        return pieces if self.trace is None else {**pieces, "trace": self.trace}

    def inferred_algorithm(self) -> str:
        """The algorithm an objective that names none is for: "update_rule" with an update rule, "pqn" with a trace
        slot, else "ppo"."""
        if self.update_rule is not None:
            return "update_rule"
        return "ppo" if self.trace is None else "pqn"

    def zero_meta(self) -> dict[str, Any]:
        """Meta-parameters at which every learnable piece equals its handcrafted baseline."""
        return {slot: piece.zero_meta() for slot, piece in self.pieces().items()}

    def to_spec(self) -> dict[str, dict]:
        """A plain-data description: `{slot: {"kind": name, **options}}`, with `"plugin": module` for a piece that a
        plugin defined (`metadisco.core.plugins`), and `"algorithm": {"kind": name}` where the algorithm is not
        the one the slots imply (`inferred_algorithm`)."""
        spec = {slot: {"kind": piece.name, **({"plugin": piece.plugin} if piece.plugin else {}), **piece.options()}
                for slot, piece in self.pieces().items()}
        if self.algorithm != self.inferred_algorithm():
            spec["algorithm"] = {"kind": self.algorithm}
        return spec

    def to_plain(self) -> dict[str, dict]:
        """The short spec a config file shows: only the slots, and in them the options, that differ from the
        default objective's (`metadisco.core.schema.plain_data`); a trace or update_rule slot has no default, so it is
        always written."""
        default = Objective().to_spec()
        out = {}
        for slot, spec in self.to_spec().items():
            if slot == "algorithm":
                out[slot] = dict(spec)
                continue
            if spec != default.get(slot):
                kind_default = type(getattr(self, slot))().options() \
                    if slot not in default or spec["kind"] != default[slot]["kind"] \
                    else {k: v for k, v in default[slot].items() if k != "kind"}
                out[slot] = plain_data({k: v for k, v in spec.items()
                                        if k in ("kind", "plugin") or v != kind_default.get(k)})
        return out

    def plugins(self) -> dict[str, str]:
        """{slot: plugin module} of the pieces that plugins defined."""
        return {slot: piece.plugin for slot, piece in self.pieces().items() if piece.plugin}

    @classmethod
    def from_spec(cls, spec: dict[str, dict]) -> Objective:
        """Build from `to_spec()`'s form; missing slots take the defaults, unknown slots are errors."""
        unknown = sorted(set(spec) - set(PIECE_REGISTRIES) - {"algorithm"}, key=str)
        if unknown:
            raise UserError(f"unknown objective slot {shorten(unknown[0])}; slots: drift, value_loss, optimizer, "
                            "trace, update_rule (and algorithm: {kind: NAME})")
        spec = dict(spec)
        algorithm = spec.pop("algorithm", None)
        if algorithm is not None and (not isinstance(algorithm, dict) or set(algorithm) != {"kind"}
                                      or not isinstance(algorithm["kind"], str)):
            raise UserError(f"objective key 'algorithm' needs {{kind: NAME}} (e.g. {{kind: dqn}}), got "
                                f"{shorten(algorithm)}")
        pieces = {}
        for slot, piece_spec in spec.items():
            if not isinstance(piece_spec, dict) or not isinstance(piece_spec.get("kind"), str):
                raise UserError(f"objective slot {slot!r} needs a mapping with a 'kind' name, got "
                                f"{shorten(piece_spec)}")
            bad = [k for k in piece_spec if not isinstance(k, str)]
            if bad:
                raise UserError(f"objective slot {slot!r} has an option named {shorten(bad[0])}, not a name")
            options = {k: tuple(v) if isinstance(v, list) else v for k, v in piece_spec.items()
                       if k not in ("kind", "plugin")}
            pieces[slot] = _make(slot, piece_spec["kind"], piece_spec.get("plugin"), options)
        return cls(**pieces, algorithm=algorithm["kind"] if algorithm else "")


def _make(slot: str, kind: str, plugin: Any, options: dict) -> Piece:
    """The piece of `kind` for `slot`; when the spec names the plugin it came from, that plugin must be the one
    loaded (it is never imported from here: a spec is data, see `metadisco.core.plugins`)."""
    from metadisco.core.plugins import not_loaded_error

    registry = PIECE_REGISTRIES[slot]
    if plugin is not None and not isinstance(plugin, str):
        raise UserError(f"objective slot {slot!r}: plugin must be a module name, got {shorten(plugin)}")
    if plugin and kind not in registry.names():
        try:
            registry.get(kind)  # installed plugins' entry points may define it
        except UserError:
            raise not_loaded_error(f"{registry.kind} {kind!r}", plugin) from None
    piece = registry.make(kind, **options)
    if plugin and piece.plugin != plugin:
        raise UserError(f"{registry.kind} {kind!r} was defined by the plugin module {plugin!r}, but the one "
                        f"loaded is defined by {piece.plugin or 'metadisco'}; load {plugin} with --plugin")
    return piece


def _default_piece(slot: str) -> Piece | None:
    """The piece the default objective has in `slot`."""
    f = Objective.__dataclass_fields__[slot]
    return f.default_factory() if f.default is MISSING else f.default


BUILTIN_OBJECTIVES: dict[str, Objective] = {
    "ppo": Objective(drift=DRIFTS.make("ppo")),
    "dpo": Objective(drift=DRIFTS.make("dpo")),
    # PQN (Gallici, Fellows et al., ICLR 2025): L2 TD loss, RAdam, Peng's Q(lambda); the drift is unused.
    "pqn": Objective(value_loss=VALUE_LOSSES.make("l2"), optimizer=OPTIMIZERS.make("radam"),
                     trace=TRACES.make("peng")),
    # DQN (Mnih et al. 2015): the squared TD error (L2 of Q(s, a) against the target network's target) and Adam
    # (every objective's default optimiser, so that an objective naming algorithm dqn alone is DQN at zero); the
    # drift is unused.
    "dqn": Objective(value_loss=VALUE_LOSSES.make("l2"), algorithm="dqn"),
    # Double DQN (van Hasselt et al. 2016), and DQN with the losses Co-Reyes et al. (ICLR 2021) evolved from DQN's.
    "ddqn": Objective(value_loss=VALUE_LOSSES.make("l2"), algorithm="ddqn"),
    "dqn_reg": Objective(value_loss=VALUE_LOSSES.make("dqn_reg"), algorithm="dqn"),
    "dqn_clipped": Objective(value_loss=VALUE_LOSSES.make("dqn_clipped"), algorithm="dqn"),
    # disco_rl's handcrafted actor-critic update rule (V-trace, categorical value; DeepMind's settings): the control
    # of learned update rules.
    "actor_critic": Objective(update_rule=UPDATE_RULES.make("actor_critic")),
}
