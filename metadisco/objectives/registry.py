"""Registries of objective pieces by name: one each for drifts, value losses and optimisers.

A piece is a frozen dataclass: its fields are static settings (sizes, constants), hashable so the trainer
can be compiled once per piece; its meta-parameters are a separate pytree (`zero_meta()`), empty for a
handcrafted piece. Register a new piece with the decorator and it is usable everywhere by name.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax

from metadisco.errors import UserError, unknown_name_error
from metadisco.validate import shorten


class Progress(NamedTuple):
    """Where training is: update n of N. Both scalars (traced inside the trainer)."""

    fraction: jax.Array  # n / N in [0, 1)
    num_updates: jax.Array  # N, as float32


class Registry:
    def __init__(self, kind: str):
        self.kind = kind
        self._pieces: dict[str, type] = {}

    def register(self, name: str):
        def decorate(cls):
            if name in self._pieces:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            cls.name = name
            self._pieces[name] = cls
            return cls

        return decorate

    def names(self) -> list[str]:
        return sorted(self._pieces)

    def get(self, name: str) -> type:
        if name not in self._pieces:
            raise unknown_name_error(self.kind, name, self.names())
        return self._pieces[name]

    def make(self, name: str, **options: Any):
        """An instance of piece `name` with `options`; unknown options are a `UserError`."""
        from metadisco.limits import check_meta_parameters
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


class Piece:
    """Base of every objective piece: handcrafted by default (no meta-parameters)."""

    name = "?"
    positive_options: tuple[str, ...] = ()  # float options that must be > 0 (checked when the piece is made)

    def zero_meta(self) -> dict:
        """The meta-parameters at which this piece equals its handcrafted baseline (the ES's start)."""
        return {}

    def options(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def learnable(self) -> bool:
        return bool(jax.tree.leaves(self.zero_meta()))
