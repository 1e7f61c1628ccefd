"""The inner trainers by algorithm: `make_trainer(config, env, objective) -> Trainer` builds the trainer of the
registered algorithm `config.algorithm` (`metadisco.trainers.algorithm`), after that algorithm has checked that the
objective is one it trains whole (`Objective.algorithm`; a learnable piece it would never call would be evolved for
nothing).

    trainers/algorithm.py  the registry: one `Algorithm` record per algorithm module
    trainers/base.py       what every trainer shares: Metrics, TrainResult, TrainState, Trainer, the assembly
    trainers/ppo.py        PPO / mirror learning       trainers/pqn.py    PQN (Q(lambda), LayerNorm Q-network)
    trainers/dqn.py        DQN (replay, target network, epsilon-greedy; Double DQN's target an option)
    trainers/update_rule.py   an agent taught by a learned update rule, from a replay of whole trajectories
    trainers/config.py     TrainConfig, options, presets   trainers/hyper.py   traced vs static settings
    trainers/traced.py     Hyper: the traced settings every algorithm has
"""

from __future__ import annotations

from collections.abc import Callable

from metadisco.objectives import Objective
from metadisco.trainers.algorithm import check_calls, get_algorithm
from metadisco.trainers.base import Trainer, TrainResult
from metadisco.trainers.config import TrainConfig


def check_objective(config: TrainConfig, objective: Objective) -> None:
    """A `UserError` unless `objective` is one that `config.algorithm` trains whole: the algorithm's own check
    (`Algorithm.check_objective`), then that it calls every learnable piece (`check_calls`)."""
    algorithm = get_algorithm(config.algorithm)
    algorithm.check_objective(config, objective)
    check_calls(algorithm, objective)


def make_trainer(config: TrainConfig, env, objective: Objective) -> Trainer:
    """The steppable `Trainer(init, step, train, num_updates)` (`metadisco.trainers.base`) of `config.algorithm`
    (`metadisco.trainers.algorithm`): the one entry point every caller uses. `config` is a full config or a static
    one (`metadisco.trainers.hyper.static_of`, whose functions then need `hyper`);
    `train(key, meta_params, hyper=None) -> TrainResult` for every algorithm; with `config.eval_episodes` it also
    plays that many deterministic episodes after training (`metadisco.trainers.greedy.with_evaluation`).
    `env` is one environment (`metadisco.make_env(env_id)`), vectorised by the trainer."""
    check_objective(config, objective)
    trainer = get_algorithm(config.algorithm).build(config, env, objective)
    if config.eval_episodes:
        from metadisco.trainers.greedy import with_evaluation

        trainer = with_evaluation(trainer, config, env, objective)
    return trainer


def make_train(config: TrainConfig, env, objective: Objective) -> Callable[..., TrainResult]:
    """Build `train(key, meta_params, hyper=None) -> TrainResult` of `config.algorithm` for one agent; jit / vmap
    it as needed. Shorthand for `make_trainer(...).train`.

    Args:
        config: the trainer's settings (`get_preset(name)`, changed with `dataclasses.replace`).
        env: the environment, `metadisco.make_env(env_id)` (one env; the trainer vectorises it `config.num_envs` times).
        objective: what is trained; it must fit `config.algorithm` (a one-line `UserError` otherwise).
    """
    return make_trainer(config, env, objective).train
