"""The inner trainer: PPO / mirror learning, compiled end to end (PureJaxRL's `make_train` closure).

    train = make_train(config, env, objective)
    result = jax.jit(train)(key, meta_params)                    # one agent
    results = jax.jit(jax.vmap(train, (0, None)))(keys, meta)    # seeds
    results = jax.jit(jax.vmap(jax.vmap(train, (0, None)), (None, 0)))(keys, population)

The actor loss is mirror learning's -(r A - drift(r, A)); the drift, value loss and optimiser come from the
objective and see the meta-parameters, so the same compiled function serves every member of a population.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from metadisco.config import TrainConfig
from metadisco.envs import make_vec_env
from metadisco.episodes import step_sums, update_metrics
from metadisco.gae import gae
from metadisco.networks import make_network
from metadisco.objectives import Objective, Progress
from metadisco.objectives.registry import DriftInputs, OptimizerInputs, ValueLossInputs
from metadisco.sgd import minibatch_epochs


class Metrics(NamedTuple):
    """Per-update training metrics, each [num_updates] (plus any vmapped leading axes).

    episode_return: mean undiscounted return of the episodes that finished during the update (NaN if none).
    episode_count:  how many episodes finished during the update.
    achievements:   [num_updates, num_achievements] fraction of those episodes that unlocked each achievement,
                    for envs that report them (Craftax); None otherwise (`metadisco.episodes`).
    """

    episode_return: jax.Array
    episode_count: jax.Array
    truncation_count: jax.Array  # how many episodes were cut by a time limit (bootstrapped, not terminal)
    actor_loss: jax.Array
    value_loss: jax.Array
    entropy: jax.Array
    approx_kl: jax.Array
    drift_active: jax.Array  # fraction of samples where the drift is > 0
    achievements: jax.Array | None = None


class TrainResult(NamedTuple):
    metrics: Metrics
    params: Any  # final agent parameters (dropped by XLA when a caller does not return them)


class Rollout(NamedTuple):
    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: jax.Array


class Batch(NamedTuple):
    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array


class RunnerState(NamedTuple):
    params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array
    key: jax.Array


def make_train(config: TrainConfig, env, objective: Objective) -> Callable[[jax.Array, Any], TrainResult]:
    """Build `train(key, meta_params) -> TrainResult` for one agent; jit / vmap it as needed."""
    config.validate()
    vec_env = make_vec_env(env, config.num_envs, normalize_obs=config.normalize_obs,
                           normalize_reward=config.normalize_reward, gamma=config.gamma)
    network = make_network(env.spec, config.hidden_sizes, config.activation)
    num_updates = config.num_updates
    steps_per_update = config.update_epochs * config.num_minibatches

    def learning_rate(count):
        if not config.anneal_lr:
            return config.lr
        return config.lr * (1.0 - (count // steps_per_update) / num_updates)

    def loss_fn(params, batch: Batch, meta, progress: Progress):
        policy, value = network.apply(params, batch.obs)
        log_prob = policy.log_prob(batch.action)
        log_ratio = log_prob - batch.log_prob
        ratio = jnp.exp(log_ratio)
        adv = batch.advantage
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        drift = objective.drift(meta["drift"], DriftInputs(ratio, adv), progress)
        actor_loss = -jnp.mean(ratio * adv - drift)
        value_loss = jnp.mean(objective.value_loss(meta["value_loss"], ValueLossInputs(value, batch.value,
                                                                                        batch.target), progress))
        entropy = jnp.mean(policy.entropy())
        total = actor_loss + config.vf_coef * value_loss - config.ent_coef * entropy
        approx_kl = jnp.mean((ratio - 1.0) - log_ratio)
        aux = (actor_loss, value_loss, entropy, approx_kl, jnp.mean(drift > 0))
        return total, aux

    def train(key: jax.Array, meta_params) -> TrainResult:
        inputs = OptimizerInputs(learning_rate, config.max_grad_norm, num_updates * steps_per_update)
        optimizer = objective.optimizer(meta_params["optimizer"], inputs,
                                        Progress(jnp.float32(0.0), jnp.float32(num_updates)))
        key, init_key, reset_key = jax.random.split(key, 3)
        obs, env_state = vec_env.reset(reset_key)
        params = network.init(init_key, obs[:1])
        runner = RunnerState(params, optimizer.init(params), env_state, obs, key)

        def collect(runner: RunnerState):
            """`num_steps` steps of every env with the current policy (params are loop constants)."""
            key, noise_key, step_key = jax.random.split(runner.key, 3)
            # All randomness of the rollout is drawn up front, in two vectorised calls.
            if env.spec.discrete:
                noise = jax.random.gumbel(noise_key, (config.num_steps, config.num_envs, env.spec.action_size))
            else:
                noise = jax.random.normal(noise_key, (config.num_steps, config.num_envs, env.spec.action_size))
            step_keys = jax.random.split(step_key, (config.num_steps, config.num_envs))

            def env_step(carry, xs):
                env_state, obs = carry
                step_noise, keys = xs
                policy, value = network.apply(runner.params, obs)
                action = policy.sample_from_noise(step_noise)
                env_state, out = vec_env.step(keys, env_state, action)
                transition = Rollout(obs, action, policy.log_prob(action), value, out.reward,
                                     out.terminated, out.truncated, out.final_obs)
                return (env_state, out.obs), (transition, step_sums(out))

            (env_state, obs), (transitions, episodes) = jax.lax.scan(
                env_step, (runner.env_state, runner.obs), (noise, step_keys), unroll=config.rollout_unroll)
            return runner._replace(env_state=env_state, obs=obs, key=key), transitions, episodes

        def update(runner: RunnerState, update_index):
            runner, rollout, episodes = collect(runner)
            next_values = network.apply(runner.params, rollout.final_obs, method=network.value)
            advantages, targets = gae(rollout.reward, rollout.value, next_values, rollout.terminated,
                                      rollout.truncated, config.gamma, config.gae_lambda)
            batch = Batch(rollout.obs, rollout.action, rollout.log_prob, rollout.value, advantages, targets)
            batch = jax.tree.map(lambda x: x.reshape((config.batch_size,) + x.shape[2:]), batch)
            progress = Progress(update_index.astype(jnp.float32) / num_updates, jnp.float32(num_updates))

            def grad_fn(params, minibatch):
                return jax.grad(loss_fn, has_aux=True)(params, minibatch, meta_params, progress)

            key, epoch_key = jax.random.split(runner.key)
            params, opt_state, aux = minibatch_epochs(runner.params, runner.opt_state, epoch_key, batch, grad_fn,
                                                      optimizer, config.update_epochs, config.num_minibatches)
            actor_loss, value_loss, entropy, approx_kl, drift_active = (jnp.mean(a) for a in aux)
            metrics = Metrics(actor_loss=actor_loss, value_loss=value_loss, entropy=entropy, approx_kl=approx_kl,
                              drift_active=drift_active, **update_metrics(episodes))
            return runner._replace(params=params, opt_state=opt_state, key=key), metrics

        runner, metrics = jax.lax.scan(update, runner, jnp.arange(num_updates))
        return TrainResult(metrics, runner.params)

    return train
