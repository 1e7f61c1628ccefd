"""The learnable pieces of an RL objective: drifts, value losses and optimisers, by name."""

# Importing the piece modules registers them.
from metadisco.objectives import (  # noqa: F401
    drift,
    expression,
    learned_optimizer,
    learned_value_loss,
    lpo,
    optimizer,
    value_loss,
)
from metadisco.objectives.expression import expression_drift
from metadisco.objectives.files import load_objective, save_objective
from metadisco.objectives.objective import BUILTIN_OBJECTIVES, Objective
from metadisco.objectives.registry import DRIFTS, OPTIMIZERS, VALUE_LOSSES, Piece, Progress

__all__ = ["BUILTIN_OBJECTIVES", "DRIFTS", "OPTIMIZERS", "VALUE_LOSSES", "Objective", "Piece", "Progress",
           "expression_drift", "load_objective", "save_objective"]
