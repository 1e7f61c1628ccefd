"""The trainer of an agent that a learned update rule teaches (the objective's `update_rule` piece, e.g. DiscoRL's
Disco103: `metadisco.objectives.disco`), built like every algorithm's by `metadisco.trainers.base.assemble_trainer`
around its own update, with the same `Trainer`, `TrainState` (its `extra`: `RuleExtra`) and `Metrics`.

    trainer = make_update_rule_trainer(config, env, objective)    # config.algorithm == "update_rule" (`UPDATE_RULE`)
    result = jax.jit(trainer.train)(key, meta_params)             # {"update_rule": the rule's meta-parameters}

What a rule needs that PPO's shuffled minibatches do not give: whole time-ordered trajectories (Disco103's
meta-network runs an LSTM backward in time), a state carried across updates (its meta-LSTM and EMA normalisers) and
target parameters, and an agent that predicts what the rule trains (`UpdateRule.agent`).

Each update, as DeepMind's eval notebook runs it (colabs/eval.ipynb: `Agent.learner_step` on a FIFO replay):
`num_envs` envs act for `num_steps` steps with the current policy (a trajectory of T + 1 = num_steps observations:
the last step's action and reward start no learning, as in DeepMind's rollouts); the trajectories enter a FIFO
buffer of `replay_capacity`; once it holds `replay_batch`, that many are drawn uniformly and the agent takes one
step: its outputs now and under its target parameters on the batch give the rule's targets and next state
(`rule(meta, UpdateRuleInputs, state)`, discount and lambda from `hyper.gamma`, `hyper.gae_lambda`), the loss is
`rule.loss`'s mean over steps and trajectories, and the optimiser is Adam, then an element-wise clip of the update
at `max_abs_update`, then the learning rate (`hyper.lr`; with `anneal_lr`, annealed linearly over the learner steps,
as every algorithm's: `metadisco.trainers.base.trainer_optimizer`). The target parameters move to `target_coeff`
target + (1 - `target_coeff`) params-before-the-step (Disco103: 0.9).

Episodes: the envs reset themselves, so a trajectory runs on across an episode's end; the step is marked terminal
(the rule cuts its returns and its backward LSTM there). A time limit is marked the same way: the rule's inputs
have one kind of episode end (DeepMind's Catch has no time limit).

Metrics: the losses `rule_loss`, the update's mean loss (0 before the replay holds a batch: no step taken), and
`entropy`, the policy's on the batch.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from metadisco.core.coerce import INT32_MAX, check_float, check_int
from metadisco.core.errors import UserError
from metadisco.objectives import Objective, Progress, UpdateRuleInputs
from metadisco.objectives.registry import OptimizerInputs
from metadisco.rl.distributions import categorical_entropy
from metadisco.rl.replay import ReplayBuffer, replay_add, replay_init, replay_sample
from metadisco.trainers.algorithm import Algorithm, register, require_discrete
from metadisco.trainers.base import Metrics, Trainer, TrainState, assemble_trainer, rollout_unroll
from metadisco.trainers.config import TrainConfig
from metadisco.trainers.episodes import update_metrics
from metadisco.trainers.hyper import split_config
from metadisco.trainers.rollout import rollout
from metadisco.trainers.traced import Hyper


@dataclass(frozen=True)
class UpdateRuleOptions:
    """The update-rule trainer's own static settings (`TrainConfig.algorithm_options`; `--set replay_batch=8`
    addresses them): a FIFO replay of `replay_capacity` whole trajectories (`num_steps` each), `replay_batch` of them
    drawn for each learner step once that many are held; Adam's step clipped element-wise at `max_abs_update`.
    Defaults: DeepMind's eval notebook (google-deepmind/disco_rl colabs/eval.ipynb)."""

    replay_capacity: int = 1024
    replay_batch: int = 64
    max_abs_update: float = 1.0

    def validate(self) -> None:
        for name in ("replay_capacity", "replay_batch"):
            check_int(name, getattr(self, name), 1, INT32_MAX, "a positive int32 size under jit")
        check_float("max_abs_update", self.max_abs_update, 0.0, lo_open=True)


class Trajectory(NamedTuple):
    """Whole trajectories as the replay holds them, [capacity, T + 1, ...] each ([T + 1, batch, ...] once sampled:
    `sample_trajectories`)."""

    obs: jax.Array
    actions: jax.Array
    rewards: jax.Array
    terminal: jax.Array
    logits: jax.Array


class RuleExtra(NamedTuple):
    """What the update-rule trainer carries beside the shared `TrainState` (`TrainState.extra`)."""

    target_params: Any
    rule_state: Any  # the rule's own (Disco103's: `rule.MetaState`)
    replay: ReplayBuffer  # of `Trajectory`s


def sample_trajectories(replay: ReplayBuffer, key: jax.Array, batch: int) -> Trajectory:
    """`batch` trajectories drawn uniformly, with replacement, from those held, time first: [T + 1, batch, ...]; a
    batch as large as the buffer is the buffer, each trajectory once in slot order (with capacity = num_envs: the
    last update's rollouts, on-policy, as LPG learns)."""
    capacity = jax.tree.leaves(replay.data)[0].shape[0]
    drawn = replay.data if batch == capacity else replay_sample(replay, key, batch)
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), drawn)


def agent_optimizer(config: TrainConfig, inputs: OptimizerInputs) -> optax.GradientTransformation:
    """DeepMind's agent optimiser (`optimizers.scale_by_adam_sg_denom`, `optax.clip` at `max_abs_update`, then the
    learning rate): an update rule writes the agent's whole loss and names no optimiser, so its trainer steps this one
    (`Algorithm.optimizer`). The stop-gradient on Adam's denominator matters to meta-gradients only, so plain Adam
    computes the same numbers."""
    return optax.chain(optax.scale_by_adam(), optax.clip(config.options.max_abs_update),
                       optax.scale_by_learning_rate(inputs.learning_rate))


def make_update_rule_trainer(config: TrainConfig, env, objective: Objective) -> Trainer:
    """Build the update-rule trainer (`metadisco.trainers.base.Trainer`) of `objective.update_rule` for one agent;
    jit / vmap it as needed. It reads `num_envs`, `num_steps`, `total_timesteps`, `replay_capacity`,
    `replay_batch`, `max_abs_update`, `hidden_sizes`, `activation`, `anneal_lr` and the traced lr, gamma and
    gae_lambda of `config` (`check_update_rule_config` checks the replay's sizes)."""
    config, defaults = split_config(config)
    options: UpdateRuleOptions = config.options
    rule = objective.update_rule
    if rule is None:
        raise ValueError("make_update_rule_trainer needs an objective with an update_rule")
    require_discrete(config.algorithm, env.spec)
    num_actions = env.spec.action_size
    network = rule.agent(num_actions, config.hidden_sizes, config.activation)
    takes_actions = "actions" in inspect.signature(type(network).__call__).parameters
    num_updates = config.num_updates

    def init_extra(params, obs) -> RuleExtra:
        steps = config.num_steps
        example = Trajectory(jnp.zeros((steps,) + obs.shape[1:], obs.dtype), jnp.zeros(steps, jnp.int32),
                             jnp.zeros(steps, jnp.float32), jnp.zeros(steps, bool),
                             jnp.zeros((steps, num_actions), jnp.float32))
        return RuleExtra(params, rule.init_state(), replay_init(example, options.replay_capacity))

    def make_update(meta_params, hyper: Hyper, envs, optimizer):
        """The update function (a rollout into the replay, then one learner step once it holds a batch) of an
        agent with these meta-parameters, settings, envs and optimiser; `assemble_trainer` scans it."""

        def collect(state: TrainState):
            """`num_steps` steps of every env with the current policy, as [num_envs, num_steps] trajectories."""
            key, noise_key, step_key = jax.random.split(state.key, 3)
            noise = jax.random.gumbel(noise_key, (config.num_steps, config.num_envs, num_actions))
            step_keys = jax.random.split(step_key, (config.num_steps, config.num_envs))

            def act(obs, gumbel):
                logits = network.apply(state.params, obs)["logits"]
                return jnp.argmax(logits + gumbel, axis=-1).astype(jnp.int32), logits

            def record(obs, action, logits, out):
                return Trajectory(obs, action, out.reward, jnp.logical_or(out.terminated, out.truncated), logits)

            (env_state, obs), trajectory, episodes = rollout(envs, state.env_state, state.obs, act, record, noise,
                                                             step_keys, rollout_unroll(config))
            trajectory = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), trajectory)  # [num_envs, num_steps, ...]
            return state._replace(env_state=env_state, obs=obs, key=key), trajectory, episodes

        def learn(state: TrainState, key: jax.Array):
            """One step of the agent on `replay_batch` trajectories drawn from the buffer (time first from here)."""
            extra: RuleExtra = state.extra
            obs, actions, rewards, terminal, logits = sample_trajectories(extra.replay, key, options.replay_batch)
            target_out = network.apply(extra.target_params, obs) if rule.uses_target else None
            progress = Progress(state.update.astype(jnp.float32) / num_updates, jnp.float32(num_updates))

            def loss_fn(params):
                # One forward pass of the agent serves the rule, which reads its outputs as constants, and the
                # loss, the only thing differentiated: the backward pass runs only through the outputs the loss
                # reads (with Disco103's agent, the heads at the actions taken: `PredictionAgent`'s "acted").
                agent_out = network.apply(params, obs, actions) if takes_actions else network.apply(params, obs)
                seen = jax.lax.stop_gradient(agent_out)
                inputs = UpdateRuleInputs(actions, rewards[:-1], terminal[:-1], logits, seen,
                                          seen if target_out is None else target_out, hyper.gamma,
                                          hyper.gae_lambda, progress)
                targets, rule_state = rule(meta_params["update_rule"], inputs, extra.rule_state)
                return jnp.mean(rule.loss(inputs, agent_out, targets)), (rule_state, seen)

            (loss, (rule_state, agent_out)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
            updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
            params = optax.apply_updates(state.params, updates)
            coeff = rule.target_coeff
            target = jax.tree.map(lambda old, new: old * coeff + (1.0 - coeff) * new, extra.target_params,
                                  state.params)
            entropy = jnp.mean(categorical_entropy(agent_out["logits"]))
            return (params, opt_state, target, rule_state), loss, entropy

        def update(state: TrainState, _):
            state, trajectory, episodes = collect(state)
            extra: RuleExtra = state.extra
            state = state._replace(extra=extra._replace(replay=replay_add(extra.replay, trajectory)))
            key, learn_key = jax.random.split(state.key)
            ready = state.extra.replay.size >= options.replay_batch  # DeepMind's learner waits for a full batch
            learned, loss, entropy = learn(state, learn_key)
            before = (state.params, state.opt_state, state.extra.target_params, state.extra.rule_state)
            params, opt_state, target, rule_state = jax.tree.map(lambda a, b: jnp.where(ready, a, b), learned,
                                                                 before)
            zero = jnp.float32(0.0)
            metrics = Metrics(**update_metrics(episodes),
                              losses={"rule_loss": jnp.where(ready, loss, zero), "entropy": entropy}, diagnostics={})
            extra = state.extra._replace(target_params=target, rule_state=rule_state)
            return state._replace(params=params, opt_state=opt_state, extra=extra, key=key,
                                  update=state.update + 1), metrics

        return update

    return assemble_trainer(config, defaults, env, objective, network, make_update, init_extra)


def check_update_rule_objective(config: TrainConfig, objective: Objective) -> None:
    """A `UserError` unless `objective` is a learned update rule."""
    if objective.algorithm != "update_rule":
        raise UserError("algorithm update_rule needs an objective with an update rule, e.g. one from "
                        "`metadisco import --format disco103` or `update_rule: {kind: disco}`")


def check_update_rule_config(config: TrainConfig) -> None:
    """The replay must hold a batch and a rollout, and a trajectory needs a step and the one after it."""
    options: UpdateRuleOptions = config.options
    if max(options.replay_batch, config.num_envs) > options.replay_capacity:
        raise UserError(f"replay_capacity {options.replay_capacity} must hold replay_batch {options.replay_batch} "
                        f"and num_envs {config.num_envs} trajectories")
    if config.num_steps < 2:
        raise UserError("num_steps must be at least 2 for algorithm update_rule: a trajectory needs a step and "
                        "the one after it")


def rule_agent_mode_action(config: TrainConfig, env, objective: Objective | None = None):
    """(params, obs) -> argmax of the rule's agent's logits (`UpdateRule.agent`, whose outputs have "logits")."""
    if objective is None or objective.update_rule is None:
        raise ValueError("the mode of an update rule's agent needs the objective that names the rule")
    agent = objective.update_rule.agent(env.spec.action_size, config.hidden_sizes, config.activation)
    return lambda params, obs: jnp.argmax(agent.apply(params, obs)["logits"], axis=-1).astype(jnp.int32)


UPDATE_RULE = register(Algorithm(
    name="update_rule",
    summary="an agent taught by a learned update rule (DiscoRL's Disco103, LPG) from a replay of whole trajectories",
    build=make_update_rule_trainer,
    mode_action=rule_agent_mode_action,
    control="actor_critic",
    baseline=lambda objective: objective.update_rule.baseline,
    slots=("update_rule",),
    options=UpdateRuleOptions,
    check_objective=check_update_rule_objective,
    check_config=check_update_rule_config,
    optimizer=agent_optimizer,
    optimizer_steps=lambda config: 1,
    presets={
        # A learned update rule, DiscoRL's eval notebook (google-deepmind/disco_rl colabs/eval.ipynb, commit 9059a29) on
        # Catch: 2 envs x 29 steps per update, one learner step on 64 trajectories from a FIFO replay of 1024 (each
        # trajectory replayed 32 times on average), 1000 updates, lr 1e-2 constant, Adam clipped element-wise at 1;
        # Disco103's discount 0.997 and lambda 0.95 (agent.get_settings_disco); its 512-512 ReLU MLP agent.
        "classic": TrainConfig(
            algorithm="update_rule", num_envs=2, num_steps=29, total_timesteps=58_000, lr=1e-2, anneal_lr=False,
            gamma=0.997, gae_lambda=0.95, hidden_sizes=(512, 512), activation="relu",
        ),
        # Not DeepMind's (its released code runs Catch only): MinAtar with the same learner (64 trajectories of 29
        # steps a step, replay of 1024, Disco103's agent), 16 envs per update (each trajectory replayed 4 times on
        # average), 1e7 steps as PPO's MinAtar preset, lr 3e-4 (agent.py's default) constant.
        "minatar": TrainConfig(
            algorithm="update_rule", num_envs=16, num_steps=29, total_timesteps=10_000_000, lr=3e-4, anneal_lr=False,
            gamma=0.997, gae_lambda=0.95, hidden_sizes=(512, 512), activation="relu",
        ),
    },
))
