"""What every method of an evaluation trains with on each env: one settings group, so that `evaluate` and
`prepare` take it whole instead of three loose parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Training:
    """The env's preset (None: the env family's own for the objective's algorithm), its budget in env steps
    (None: the preset's; an env given as 'ID@TIMESTEPS' keeps its own) and changes to it ('key=value' strings or a
    mapping of typed values, as `--set` takes them)."""

    timesteps: int | None = None
    overrides: tuple[str, ...] | Mapping[str, Any] = ()
    preset: str | None = None

    def __post_init__(self):
        if not isinstance(self.overrides, Mapping):  # a list from a command line: hashable, like the rest
            object.__setattr__(self, "overrides", tuple(self.overrides))

    def config(self, env_id: str, budget: int | None, algorithm: str):
        """The validated `TrainConfig` of `env_id` at `budget` (None: `timesteps`) for `algorithm`."""
        from metadisco.runs.seeds import resolve_config

        return resolve_config(env_id, self.preset, self.overrides, budget or self.timesteps, algorithm)
