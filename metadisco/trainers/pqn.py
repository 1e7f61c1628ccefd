"""The PQN inner trainer: Q-learning with a LayerNorm Q-network, no target network and no replay buffer
(Gallici, Fellows et al., "Simplifying Deep Temporal Difference Learning", ICLR 2025; mttga/purejaxql).

    trainer = make_pqn_trainer(config, env, objective)     # config.algorithm == "pqn" (the record `PQN`);
                                                           # callers use metadisco.trainers.make_trainer
    result = jax.jit(trainer.train)(key, meta_params, hyper)  # the same Trainer, Metrics, TrainResult as PPO

Each update: `num_envs` envs act epsilon-greedily for `num_steps` steps (epsilon decays linearly from
`eps_start` to `eps_finish` over the first `eps_decay` of the updates); Q(lambda) targets are computed backwards
over the rollout (`metadisco.rl.q_lambda`, bootstrapped at truncation); then `update_epochs` epochs of shuffled
minibatches (`metadisco.rl.sgd`) minimise the TD loss, with gradient clipping and a linearly decayed learning rate.

The objective's pieces: the value-loss slot is the TD loss, called with ValueLossInputs(Q(s, a) now, Q(s, a) at
rollout time, G) (L2 is PQN's 0.5 (Q - G)^2, and a learned value loss is a residual around it); the optimiser
slot builds the optimiser (PQN's is RAdam); the trace slot gives lambda per step (PQN's is Peng's constant
lambda). PQN has no policy, so the drift is unused (`metadisco.trainers` refuses a learnable one).

Metrics: the loss `td_loss`; the diagnostic `entropy`, the epsilon-greedy behaviour policy's (a function of epsilon
and the number of actions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from metadisco.core.coerce import check_float
from metadisco.core.errors import UserError
from metadisco.objectives import Objective, Progress
from metadisco.objectives.registry import TraceInputs, ValueLossInputs
from metadisco.rl.q_lambda import q_lambda_returns
from metadisco.rl.sgd import minibatch_epochs
from metadisco.trainers.algorithm import Algorithm, register
from metadisco.trainers.base import Metrics, Trainer, TrainState, assemble_trainer, rollout_unroll
from metadisco.trainers.config import EpochOptions, TrainConfig, check_minibatches, own_options
from metadisco.trainers.episodes import update_metrics
from metadisco.trainers.hyper import split_config
from metadisco.trainers.networks import make_q_network
from metadisco.trainers.rollout import rollout


@dataclass(frozen=True)
class PQNOptions(EpochOptions):
    """PQN's own settings (`TrainConfig.algorithm_options`; `--set eps_finish=0.2` addresses them): `update_epochs`
    epochs of `num_minibatches` minibatches per rollout, the gradient's norm clipped at max_grad_norm (traced,
    `PQNHyper`); epsilon decays linearly from eps_start to eps_finish over the first eps_decay of the updates;
    rewards are multiplied by reward_scale in the TD targets (not in the logged returns)."""

    eps_start: float = 1.0
    eps_finish: float = 0.05
    eps_decay: float = 0.1
    reward_scale: float = 1.0

    def validate(self) -> None:
        super().validate()
        for name in ("eps_start", "eps_finish"):
            check_float(name, getattr(self, name), 0.0, 1.0)
        check_float("eps_decay", self.eps_decay, 0.0, 1.0, lo_open=True)
        check_float("reward_scale", self.reward_scale, 0.0, lo_open=True)


class PQNHyper(NamedTuple):
    """PQN's traced settings (`metadisco.trainers.traced.Hyper`'s, then its gradient clip)."""

    lr: Any
    gamma: Any
    gae_lambda: Any
    max_grad_norm: Any


class Transition(NamedTuple):
    obs: jax.Array
    action: jax.Array
    q_taken: jax.Array  # Q(s_t, a_t) at rollout time
    greedy: jax.Array  # a_t was the greedy action
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: jax.Array


class Batch(NamedTuple):
    obs: jax.Array
    action: jax.Array
    old_q: jax.Array
    target: jax.Array


def epsilon_greedy_entropy(epsilon: jax.Array, num_actions: int) -> jax.Array:
    """Entropy of epsilon-greedy over `num_actions` actions: the greedy one has 1 - eps + eps / A, others eps / A."""
    other = epsilon / num_actions
    greedy = 1.0 - epsilon + other
    return -(greedy * jnp.log(greedy) + (num_actions - 1) * jnp.where(other > 0, other * jnp.log(other), 0.0))


def make_pqn_trainer(config: TrainConfig, env, objective: Objective) -> Trainer:
    """Build PQN's steppable trainer (`metadisco.trainers.base.Trainer`) for one agent; jit / vmap it as needed.
    `config` is a full config or a static one (`metadisco.trainers.hyper.static_of`, whose functions then need
    `hyper`); PQN reads lr, gamma, gae_lambda (Q(lambda)'s lambda) and max_grad_norm from the hyper."""
    config, defaults = split_config(config)  # from here on a traced field cannot be read from the config by mistake
    options: PQNOptions = config.options
    network = make_q_network(env.spec, config.hidden_sizes, config.activation)
    num_actions = env.spec.action_size
    num_updates = config.num_updates
    # epsilon at update n: eps_start -> eps_finish linearly over eps_decay * num_updates updates, then constant.
    epsilon = optax.linear_schedule(options.eps_start, options.eps_finish, options.eps_decay * num_updates)

    def loss_fn(params, batch: Batch, meta, progress: Progress):
        q = network.apply(params, batch.obs)
        q_taken = jnp.take_along_axis(q, batch.action[:, None], axis=-1)[:, 0]
        inputs = ValueLossInputs(q_taken, batch.old_q, batch.target)
        return jnp.mean(objective.value_loss(meta["value_loss"], inputs, progress))

    def make_update(meta_params, hyper: PQNHyper, envs, optimizer):
        """The update function (rollout, Q(lambda), epochs of minibatch steps) of an agent with these
        meta-parameters, settings, envs and optimiser; `metadisco.trainers.base.assemble_trainer` scans it."""

        def collect(state: TrainState, eps: jax.Array):
            """`num_steps` epsilon-greedy steps of every env with the current Q-network (params are constants)."""
            key, explore_key, action_key, step_key = jax.random.split(state.key, 4)
            shape = (config.num_steps, config.num_envs)
            # All randomness of the rollout is drawn up front, in vectorised calls.
            explore = jax.random.uniform(explore_key, shape) < eps
            random_actions = jax.random.randint(action_key, shape, 0, num_actions)
            step_keys = jax.random.split(step_key, shape)

            def act(obs, step_noise):
                explore, random_action = step_noise
                q = network.apply(state.params, obs)
                greedy = jnp.argmax(q, axis=-1).astype(jnp.int32)
                return jnp.where(explore, random_action, greedy), (q, greedy)

            def record(obs, action, aux, out):
                q, greedy = aux
                q_taken = jnp.take_along_axis(q, action[:, None], axis=-1)[:, 0]
                return Transition(obs, action, q_taken, action == greedy, out.reward, out.terminated, out.truncated,
                                  out.final_obs)

            (env_state, obs), transitions, episodes = rollout(envs, state.env_state, state.obs, act, record,
                                                              (explore, random_actions), step_keys,
                                                              rollout_unroll(config))
            return state._replace(env_state=env_state, obs=obs, key=key), transitions, episodes

        def update(state: TrainState, _):
            update_index = state.update
            progress = Progress(update_index.astype(jnp.float32) / num_updates, jnp.float32(num_updates))
            eps = epsilon(update_index)
            state, rollout, episodes = collect(state, eps)
            next_max_q = jnp.max(network.apply(state.params, rollout.final_obs), axis=-1)
            # Whether the action after step t was greedy (the rollout's last step has no successor here: 1).
            greedy = rollout.greedy.astype(jnp.float32)
            greedy_next = jnp.concatenate([greedy[1:], jnp.ones_like(greedy[:1])])
            lam = objective.trace(meta_params["trace"], TraceInputs(hyper.gae_lambda, greedy_next), progress)
            targets = q_lambda_returns(rollout.reward * options.reward_scale, next_max_q, rollout.terminated,
                                       rollout.truncated, hyper.gamma, lam)
            batch = Batch(rollout.obs, rollout.action, rollout.q_taken, targets)
            batch = jax.tree.map(lambda x: x.reshape((config.batch_size,) + x.shape[2:]), batch)

            def grad_fn(params, minibatch):
                loss, grads = jax.value_and_grad(loss_fn)(params, minibatch, meta_params, progress)
                return grads, loss

            key, epoch_key = jax.random.split(state.key)
            params, opt_state, losses = minibatch_epochs(state.params, state.opt_state, epoch_key, batch, grad_fn,
                                                         optimizer, options.update_epochs, options.num_minibatches)
            metrics = Metrics(**update_metrics(episodes), losses={"td_loss": jnp.mean(losses)},
                              diagnostics={"entropy": epsilon_greedy_entropy(eps, num_actions)})
            return state._replace(params=params, opt_state=opt_state, key=key, update=state.update + 1), metrics

        return update

    return assemble_trainer(config, defaults, env, objective, network, make_update)


def check_pqn_objective(config: TrainConfig, objective: Objective) -> None:
    """A `UserError` unless `objective` is a TD objective (value loss as TD loss, optimiser, trace)."""
    if objective.algorithm != "pqn":
        raise UserError(f"algorithm pqn needs a TD objective (one with a trace slot), e.g. the built-in 'pqn' or "
                        f"`trace: {{kind: peng}}` in the objective; this one is for {objective.algorithm}")


def greedy_q_action(config: TrainConfig, env, objective: Objective | None = None):
    """(params, obs) -> argmax_a Q(obs, a) of the Q-network (PQN's and DQN's mode)."""
    del objective
    q_network = make_q_network(env.spec, config.hidden_sizes, config.activation)
    return lambda params, obs: jnp.argmax(q_network.apply(params, obs), axis=-1).astype(jnp.int32)


PQN = register(Algorithm(
    name="pqn",
    summary="PQN (Gallici, Fellows et al., ICLR 2025): Q(lambda) without a target network or replay; the value-loss "
            "(TD loss), optimiser and trace slots",
    build=make_pqn_trainer,
    mode_action=greedy_q_action,
    control="pqn",
    slots=("value_loss", "optimizer", "trace"),
    options=PQNOptions,
    hyper=PQNHyper,
    check_objective=check_pqn_objective,
    check_config=check_minibatches,
    presets={
        # PQN, mttga/purejaxql purejaxql/config/alg/pqn_cartpole.yaml (commit 970ecce): 32 envs x 64 steps, 5e5
        # steps, 4 epochs x 16 minibatches, lr 1e-4 linearly decayed, eps 1.0 -> 0.2 over 20% of the updates, 2 x 256
        # LayerNorm ReLU MLP, max grad norm 10, reward scale 0.1, gamma 0.99, lambda 0.95; RAdam (pqn_gymnax.py, the
        # built-in objective `pqn`'s optimiser).
        "classic": TrainConfig(
            algorithm="pqn", num_envs=32, num_steps=64, total_timesteps=500_000, gamma=0.99, gae_lambda=0.95,
            lr=1e-4, anneal_lr=True, hidden_sizes=(256, 256), activation="relu",
            algorithm_options=own_options(PQNOptions, update_epochs=4, num_minibatches=16, max_grad_norm=10.0,
                                          eps_finish=0.2, eps_decay=0.2, reward_scale=0.1),
        ),
        # PQN, purejaxql/config/alg/pqn_minatar.yaml (commit 0cd95ed): 128 envs x 32 steps, 1e7 steps, 2 epochs x 32
        # minibatches, lr 5e-4 decayed, eps 1.0 -> 0.05 over 10%, max grad norm 10, gamma 0.99, lambda 0.65, reward
        # scale 1. The network is not theirs: pqn_minatar.py has a CNN (Conv 16 3x3 -> LayerNorm -> Dense 128 ->
        # LayerNorm); metadisco's envs flatten MinAtar's grid, so this is a 2 x 128 LayerNorm ReLU MLP.
        "minatar": TrainConfig(
            algorithm="pqn", num_envs=128, num_steps=32, total_timesteps=10_000_000, gamma=0.99, gae_lambda=0.65,
            lr=5e-4, anneal_lr=True, hidden_sizes=(128, 128), activation="relu",
            algorithm_options=own_options(PQNOptions, update_epochs=2, num_minibatches=32, max_grad_norm=10.0),
        ),
        # PQN, purejaxql/config/alg/pqn_craftax.yaml (commit c5aa074): 1024 envs x 1 step, 1e9 steps, 1 epoch x 1
        # minibatch, lr 1e-4 decayed, eps 0.1 -> 0.005 over 20%, 4 x 1024 LayerNorm MLP, max grad norm 1, gamma
        # 0.99, lambda 0 (one-step targets). NORM_INPUT (a BatchNorm on the input) becomes running observation
        # normalisation here; their optimistic resets are not reproduced.
        "craftax": TrainConfig(
            algorithm="pqn", num_envs=1024, num_steps=1, total_timesteps=1_000_000_000, gamma=0.99, gae_lambda=0.0,
            lr=1e-4, anneal_lr=True, hidden_sizes=(1024,) * 4, activation="relu", normalize_obs=True,
            algorithm_options=own_options(PQNOptions, update_epochs=1, num_minibatches=1, max_grad_norm=1.0,
                                          eps_start=0.1, eps_finish=0.005, eps_decay=0.2),
        ),
    },
))
