"""The learnable pieces of an RL objective: drifts, value losses, optimisers, traces and update rules, by name.

Every piece but an update rule is called `piece(meta, inputs, progress)` (see `metadisco.objectives.registry` for
the slots' Protocols); a researcher's own pieces register with the same decorators and load as plugins
(`metadisco.core.plugins`)."""

# Importing the piece modules registers them.
from metadisco.objectives import (  # noqa: F401
    actor_critic,
    drift,
    expression,
    learned_dpo,
    learned_optimizer,
    learned_td_loss,
    learned_trace,
    learned_value_loss,
    lpg,
    lpo,
    open_optimizer,
    optimizer,
    td_loss,
    trace,
    value_loss,
)
from metadisco.objectives.disco import update_rule as disco_update_rule  # noqa: F401
from metadisco.objectives.expression import expression_drift
from metadisco.objectives.files import load_objective, save_objective
from metadisco.objectives.objective import BUILTIN_OBJECTIVES, Objective
from metadisco.objectives.registry import (
    DRIFTS,
    OPTIMIZERS,
    TRACES,
    UPDATE_RULES,
    VALUE_LOSSES,
    Drift,
    DriftInputs,
    Optimizer,
    OptimizerContext,
    OptimizerInputs,
    Piece,
    Progress,
    Trace,
    TraceInputs,
    UpdateRule,
    UpdateRuleInputs,
    ValueLoss,
    ValueLossInputs,
)

__all__ = ["BUILTIN_OBJECTIVES", "DRIFTS", "OPTIMIZERS", "TRACES", "UPDATE_RULES", "VALUE_LOSSES", "Drift",
           "DriftInputs", "Objective", "Optimizer", "OptimizerContext", "OptimizerInputs", "Piece", "Progress", "Trace",
           "TraceInputs", "UpdateRule", "UpdateRuleInputs", "ValueLoss", "ValueLossInputs", "expression_drift",
           "load_objective", "save_objective"]
