"""What every method of an evaluation trains with on each env: one settings group, so that `evaluate` and
`prepare` take it whole instead of three loose parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
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

    def per_algorithm(self, algorithms: list[str]) -> dict[str, Training]:
        """{algorithm: Training} for methods of `algorithms`: with several, each takes only the changes its
        algorithm reads (`metadisco.trainers.algorithm.readers`: e.g. replay_batch goes to update_rule, ent_coef to
        ppo); a change that none of them reads is a `SettingError`."""
        from metadisco.core.errors import SettingError
        from metadisco.trainers.algorithm import readers
        from metadisco.trainers.config import parse_overrides

        if len(algorithms) == 1:
            return {algorithms[0]: self}
        changes = dict(self.overrides) if isinstance(self.overrides, Mapping) else parse_overrides(self.overrides)
        read_by = {k: readers(k) or tuple(algorithms) for k in changes}
        unread = [k for k in changes if not set(read_by[k]) & set(algorithms)]
        if unread:
            raise SettingError(f"{unread[0]} is a setting of algorithm {' and '.join(read_by[unread[0]])}, which "
                               f"none of these methods trains with ({', '.join(algorithms)})", ("overrides",))
        return {a: replace(self, overrides={k: v for k, v in changes.items() if a in read_by[k]})
                for a in algorithms}

