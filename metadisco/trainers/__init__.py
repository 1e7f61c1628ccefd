"""The inner trainers by algorithm: `make_trainer(config, env, objective) -> Trainer` picks PPO / mirror learning
(`metadisco.trainers.ppo`), PQN (`metadisco.trainers.pqn`) or a learned update rule's (`metadisco.trainers.
update_rule`) by `config.algorithm`, after checking that the objective is one that algorithm uses whole: an
objective is for PQN when it has a trace slot, for update_rule when it has an update rule (`Objective.algorithm`),
and a learnable piece that the chosen trainer would never call would be evolved for nothing.

    trainers/base.py     what every trainer shares: Metrics, TrainResult, TrainState, Trainer, and helpers
    trainers/ppo.py      PPO / mirror learning          trainers/pqn.py     PQN (Q(lambda), LayerNorm Q-network)
    trainers/update_rule.py   an agent taught by a learned update rule, from a replay of whole trajectories
    trainers/config.py   TrainConfig, presets, Hyper    trainers/hyper.py   traced vs static settings
"""

from __future__ import annotations

from collections.abc import Callable

from metadisco.core.errors import UserError
from metadisco.objectives import Objective
from metadisco.trainers.base import Trainer, TrainResult
from metadisco.trainers.config import TrainConfig


def check_objective(config: TrainConfig, objective: Objective) -> None:
    """A `UserError` unless `objective` is for `config.algorithm`."""
    if objective.algorithm != config.algorithm:
        if "update_rule" in (config.algorithm, objective.algorithm):
            if config.algorithm == "update_rule":
                raise UserError("algorithm update_rule needs an objective with an update rule, e.g. one from "
                                "`metadisco import --format disco103` or `update_rule: {kind: disco}`")
            raise UserError(f"this objective is a learned update rule, for algorithm update_rule; give --set "
                            f"algorithm=update_rule (or an update_rule_* preset), not {config.algorithm}")
        if config.algorithm == "pqn":
            raise UserError("algorithm pqn needs a TD objective (one with a trace slot), e.g. the built-in 'pqn' "
                            "or `trace: {kind: peng}` in the objective; this one is for ppo")
        raise UserError("this objective is a TD objective (it has a trace slot), for algorithm pqn; give "
                        "--set algorithm=pqn (or a pqn_* preset), or an objective without a trace")
    if config.algorithm == "pqn" and getattr(objective.optimizer, "needs_context", False):
        raise UserError(f"optimizer {objective.optimizer.name!r} reads the actor's and critic's activations, which "
                        "only algorithm ppo gives it; use it with ppo, or another optimiser with pqn")
    if config.algorithm == "pqn" and objective.drift.learnable:
        raise UserError(f"algorithm pqn has no policy, so it never calls the drift; the learnable drift "
                        f"{objective.drift.name!r} would be evolved for nothing: use a handcrafted one (ppo)")


def make_trainer(config: TrainConfig, env, objective: Objective) -> Trainer:
    """The steppable `Trainer(init, step, train, num_updates)` (`metadisco.trainers.base`) of `config.algorithm`:
    the one entry point every caller uses. `config` is a full config or a static one
    (`metadisco.trainers.hyper.static_of`, whose functions then need `hyper`);
    `train(key, meta_params, hyper=None) -> TrainResult` for every algorithm; with `config.eval_episodes` it also
    plays that many deterministic episodes after training (`metadisco.trainers.greedy.with_evaluation`)."""
    check_objective(config, objective)
    if config.algorithm == "pqn":
        from metadisco.trainers.pqn import make_pqn_trainer

        trainer = make_pqn_trainer(config, env, objective)
    elif config.algorithm == "update_rule":
        from metadisco.trainers.update_rule import make_update_rule_trainer

        trainer = make_update_rule_trainer(config, env, objective)
    else:
        from metadisco.trainers.ppo import make_ppo_trainer

        trainer = make_ppo_trainer(config, env, objective)
    if config.eval_episodes:
        from metadisco.trainers.greedy import with_evaluation

        trainer = with_evaluation(trainer, config, env, objective)
    return trainer


def make_train(config: TrainConfig, env, objective: Objective) -> Callable[..., TrainResult]:
    """Build `train(key, meta_params, hyper=None) -> TrainResult` of `config.algorithm` for one agent; jit / vmap
    it as needed. Shorthand for `make_trainer(...).train`."""
    return make_trainer(config, env, objective).train
