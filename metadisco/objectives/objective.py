"""An objective: one drift, one value loss and one optimiser, with one meta-parameter pytree.

`Objective` is hashable (static under jit); its meta-parameters are the dict
{"drift": ..., "value_loss": ..., "optimizer": ...}, each entry empty for a handcrafted piece.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from metadisco.errors import UserError
from metadisco.objectives.registry import DRIFTS, OPTIMIZERS, VALUE_LOSSES, Piece
from metadisco.validate import shorten

PIECE_REGISTRIES = {"drift": DRIFTS, "value_loss": VALUE_LOSSES, "optimizer": OPTIMIZERS}


@dataclass(frozen=True)
class Objective:
    drift: Piece = field(default_factory=lambda: DRIFTS.make("ppo"))
    value_loss: Piece = field(default_factory=lambda: VALUE_LOSSES.make("clipped_l2"))
    optimizer: Piece = field(default_factory=lambda: OPTIMIZERS.make("adam"))

    def pieces(self) -> dict[str, Piece]:
        return {"drift": self.drift, "value_loss": self.value_loss, "optimizer": self.optimizer}

    def zero_meta(self) -> dict[str, Any]:
        """Meta-parameters at which every learnable piece equals its handcrafted baseline."""
        return {slot: piece.zero_meta() for slot, piece in self.pieces().items()}

    def to_spec(self) -> dict[str, dict]:
        """A plain-data description: {slot: {"kind": name, **options}}, with "plugin": module for a piece that a
        plugin defined (`metadisco.plugins`)."""
        return {slot: {"kind": piece.name, **({"plugin": piece.plugin} if piece.plugin else {}), **piece.options()}
                for slot, piece in self.pieces().items()}

    def plugins(self) -> dict[str, str]:
        """{slot: plugin module} of the pieces that plugins defined."""
        return {slot: piece.plugin for slot, piece in self.pieces().items() if piece.plugin}

    @classmethod
    def from_spec(cls, spec: dict[str, dict]) -> Objective:
        """Build from `to_spec()`'s form; missing slots take the defaults, unknown slots are errors."""
        unknown = sorted(set(spec) - set(PIECE_REGISTRIES), key=str)
        if unknown:
            raise UserError(f"unknown objective slot {shorten(unknown[0])}; slots: drift, value_loss, optimizer")
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
        return cls(**pieces)


def _make(slot: str, kind: str, plugin: Any, options: dict) -> Piece:
    """The piece of `kind` for `slot`; when the spec names the plugin it came from, that plugin must be the one
    loaded (it is never imported from here: a spec is data, see `metadisco.plugins`)."""
    from metadisco.plugins import not_loaded_error

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


BUILTIN_OBJECTIVES: dict[str, Objective] = {
    "ppo": Objective(drift=DRIFTS.make("ppo")),
    "dpo": Objective(drift=DRIFTS.make("dpo")),
}
