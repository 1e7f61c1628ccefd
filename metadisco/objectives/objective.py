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
        """A plain-data description: {slot: {"kind": name, **options}}."""
        return {slot: {"kind": piece.name, **piece.options()} for slot, piece in self.pieces().items()}

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
            options = {k: tuple(v) if isinstance(v, list) else v for k, v in piece_spec.items() if k != "kind"}
            pieces[slot] = PIECE_REGISTRIES[slot].make(piece_spec["kind"], **options)
        return cls(**pieces)


BUILTIN_OBJECTIVES: dict[str, Objective] = {
    "ppo": Objective(drift=DRIFTS.make("ppo")),
    "dpo": Objective(drift=DRIFTS.make("dpo")),
}
