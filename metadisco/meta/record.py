"""What a meta-training run knows about itself beyond the ES state: the typed record each checkpoint carries.

Checkpoints store it as the plain mapping `core.checkpoint.Checkpoint.extra` (the keys below, the ones earlier
versions wrote), so a run checkpointed before the record existed resumes with the same facts; a key this version
does not know is carried along unchanged rather than dropped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class RunRecord:
    fitness_of_initial_mean: float | None = None  # generation 0's ES mean (the baseline) on fresh seeds
    validation_of_initial_mean: float | None = None  # ... and on the validation tasks
    best_validation: float | None = None  # the kept objective's validation score (objective_best.msgpack)
    best_generation: int | None = None  # ... the generation it was the ES mean of
    best_hyper: dict[str, float] | None = None  # ... its hyper units, with a `hyper:` section
    fitness_of_final_mean: float | None = None  # the last generation's ES mean on fresh seeds
    fitness_of_best: float | None = None  # the kept objective on fresh seeds of the training tasks
    other: dict[str, Any] = field(default_factory=dict)  # keys of other versions, kept as they were

    def to_plain(self) -> dict[str, Any]:
        """The checkpoint's `extra` mapping: every known fact that is set, and the unknown ones."""
        plain = {k: v for k, v in asdict(self).items() if k != "other" and v is not None}
        return {**self.other, **plain}

    @classmethod
    def from_plain(cls, extra: dict[str, Any]) -> RunRecord:
        known = {f.name for f in fields(cls)} - {"other"}
        return cls(**{k: v for k, v in extra.items() if k in known},
                   other={k: v for k, v in extra.items() if k not in known})
