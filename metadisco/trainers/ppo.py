"""The inner trainer: PPO / mirror learning, compiled end to end (PureJaxRL's `make_train` closure).

    train = make_train(config, env, objective)
    result = jax.jit(train)(key, meta_params, hyper)                     # one agent
    results = jax.jit(jax.vmap(train, (0, None, None)))(keys, meta, hyper)  # seeds
    results = jax.jit(jax.vmap(train, (0, None, 0)))(keys, meta, hypers)    # a sweep: a hyper per run

`hyper` is the config's traced settings (`PPOHyper`: learning rate, gamma, ..., the loss's coefficients; leave it
out for the config's own values, baked into the program as constants); the config's other settings fix the program. The
trainer is also steppable (`make_trainer`): `init(key, meta, hyper) -> TrainState`, `step(state, k) -> (state,
metrics of k updates)`, and `train` is exactly `step(init(...), num_updates)`, so a caller can pause, inspect,
copy and resume agents (PBT). `make_trainer` / `make_train` build the trainer of `config.algorithm`
(`metadisco.trainers.algorithm`); PPO's record is `PPO` at the end of this module, its builder `make_ppo_trainer`.

The actor loss is mirror learning's -(r A - drift(r, A)); the drift, value loss and optimiser come from the
objective and see the meta-parameters, so the same compiled function serves every member of a population.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from metadisco.core.errors import UserError
from metadisco.objectives import Objective, Progress
from metadisco.objectives.registry import DriftInputs, OptimizerContext, ValueLossInputs
from metadisco.rl.gae import gae
from metadisco.rl.sgd import minibatch_epochs
from metadisco.trainers.algorithm import Algorithm, register
from metadisco.trainers.base import Metrics, Trainer, TrainState, assemble_trainer, rollout_unroll
from metadisco.trainers.config import EpochOptions, TrainConfig, check_minibatches, check_non_negative, own_options
from metadisco.trainers.episodes import update_metrics
from metadisco.trainers.hyper import split_config
from metadisco.trainers.networks import make_network, optimizer_layout, unit_activations
from metadisco.trainers.rollout import rollout


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


@dataclass(frozen=True)
class PPOOptions(EpochOptions):
    """PPO's own settings (`TrainConfig.algorithm_options`; `--set ent_coef=0` addresses them): `update_epochs`
    epochs of `num_minibatches` minibatches per rollout; the loss is the actor's + vf_coef x the value loss -
    ent_coef x the entropy; the gradient's global norm is clipped at max_grad_norm. The coefficients and the clip
    are traced (`PPOHyper`). Defaults: PureJaxRL's `ppo.py` on CartPole-v1."""

    ent_coef: float | None = 0.01
    vf_coef: float | None = 0.5

    def validate(self) -> None:
        super().validate()
        for name in ("ent_coef", "vf_coef"):
            check_non_negative(name, getattr(self, name))


class PPOHyper(NamedTuple):
    """PPO's traced settings (`metadisco.trainers.traced.Hyper`'s, then its options'): float32 scalars for one
    agent, [runs] arrays when vmapped over a sweep or a PBT population."""

    lr: Any
    gamma: Any
    gae_lambda: Any
    ent_coef: Any
    vf_coef: Any
    max_grad_norm: Any


def make_ppo_trainer(config: TrainConfig, env, objective: Objective) -> Trainer:
    """Build PPO / mirror learning's steppable trainer of `config` (a full config, or a static one:
    `metadisco.trainers.hyper.static_of`, whose functions then need `hyper`). Only the static fields shape the program.
    Callers go through `metadisco.trainers.make_trainer`, which checks the objective fits the algorithm."""
    config, defaults = split_config(config)  # from here on a traced field cannot be read from the config by mistake
    options: PPOOptions = config.options
    network = make_network(env.spec, config.hidden_sizes, config.activation)
    num_updates = config.num_updates
    # An optimiser that reads activations and the epoch (OPEN) gets an `OptimizerContext` at each step; for every
    # other one nothing of it is computed and the program is the one it always was.
    needs_context = bool(getattr(objective.optimizer, "needs_context", False))

    def loss_fn(params, batch: Batch, meta, hyper: PPOHyper, progress: Progress):
        if needs_context:
            (policy, value), captured = network.apply(params, batch.obs, capture_intermediates=True,
                                                      mutable=["intermediates"])
        else:
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
        total = actor_loss + hyper.vf_coef * value_loss - hyper.ent_coef * entropy
        approx_kl = jnp.mean((ratio - 1.0) - log_ratio)
        aux = (actor_loss, value_loss, entropy, approx_kl, jnp.mean(drift > 0))
        if needs_context:  # each layer's mean |activation| per unit, for the optimiser's context
            aux += (unit_activations(network, params, captured["intermediates"]),)
        return total, aux

    def context_args(state: TrainState):
        """`update_extra_args` of `minibatch_epochs` for an optimiser with `needs_context`, else None."""
        if not needs_context:
            return None
        mask, layers = optimizer_layout(state.params)
        training = state.update.astype(jnp.float32) / max(num_updates - 1, 1)

        def extra_args(aux, epoch, key):
            batch_prop = epoch.astype(jnp.float32) / max(options.update_epochs - 1, 1)
            return {"context": OptimizerContext(aux[5], mask, layers, training, batch_prop, key)}

        return extra_args

    def make_update(meta_params, hyper: PPOHyper, envs, optimizer):
        """The update function (rollout, GAE, epochs of minibatch steps) of an agent with these meta-parameters,
        settings, envs and optimiser; `metadisco.trainers.base.assemble_trainer` scans it."""

        def collect(state: TrainState):
            """`num_steps` steps of every env with the current policy (params are loop constants)."""
            key, noise_key, step_key = jax.random.split(state.key, 3)
            # All randomness of the rollout is drawn up front, in two vectorised calls.
            if env.spec.discrete:
                noise = jax.random.gumbel(noise_key, (config.num_steps, config.num_envs, env.spec.action_size))
            else:
                noise = jax.random.normal(noise_key, (config.num_steps, config.num_envs, env.spec.action_size))
            step_keys = jax.random.split(step_key, (config.num_steps, config.num_envs))

            def act(obs, step_noise):
                policy, value = network.apply(state.params, obs)
                return policy.sample_from_noise(step_noise), (policy, value)

            def record(obs, action, aux, out):
                policy, value = aux
                return Rollout(obs, action, policy.log_prob(action), value, out.reward, out.terminated,
                               out.truncated, out.final_obs)

            (env_state, obs), transitions, episodes = rollout(envs, state.env_state, state.obs, act, record, noise,
                                                              step_keys, rollout_unroll(config))
            return state._replace(env_state=env_state, obs=obs, key=key), transitions, episodes

        def update(state: TrainState, _):
            state, rollout, episodes = collect(state)
            next_values = network.apply(state.params, rollout.final_obs, method=network.value)
            advantages, targets = gae(rollout.reward, rollout.value, next_values, rollout.terminated,
                                      rollout.truncated, hyper.gamma, hyper.gae_lambda)
            batch = Batch(rollout.obs, rollout.action, rollout.log_prob, rollout.value, advantages, targets)
            batch = jax.tree.map(lambda x: x.reshape((config.batch_size,) + x.shape[2:]), batch)
            progress = Progress(state.update.astype(jnp.float32) / num_updates, jnp.float32(num_updates))

            def grad_fn(params, minibatch):
                return jax.grad(loss_fn, has_aux=True)(params, minibatch, meta_params, hyper, progress)

            key, epoch_key = jax.random.split(state.key)
            params, opt_state, aux = minibatch_epochs(state.params, state.opt_state, epoch_key, batch, grad_fn,
                                                      optimizer, options.update_epochs, options.num_minibatches,
                                                      context_args(state))
            actor_loss, value_loss, entropy, approx_kl, drift_active = (jnp.mean(a) for a in aux[:5])
            metrics = Metrics(**update_metrics(episodes),
                              losses={"actor_loss": actor_loss, "value_loss": value_loss, "entropy": entropy},
                              diagnostics={"approx_kl": approx_kl, "drift_active": drift_active})
            return state._replace(params=params, opt_state=opt_state, key=key, update=state.update + 1), metrics

        return update

    return assemble_trainer(config, defaults, env, objective, network, make_update)


def check_ppo_objective(config: TrainConfig, objective: Objective) -> None:
    """A `UserError` unless `objective` is a policy-optimisation objective (drift, value loss, optimiser)."""
    if objective.algorithm != "ppo":
        name = objective.algorithm
        raise UserError(f"this objective is for algorithm {name}; give --set algorithm={name} (or a {name}_* "
                        f"preset), not {config.algorithm}")


def ppo_mode_action(config: TrainConfig, env, objective: Objective | None = None):
    """(params, obs) -> the policy's mode: argmax of the logits, or the Gaussian's mean clipped to the bounds."""
    del objective
    network = make_network(env.spec, config.hidden_sizes, config.activation)
    if env.spec.discrete:
        return lambda params, obs: jnp.argmax(
            network.apply(params, obs, method=network.policy).logits_or_mean, axis=-1).astype(jnp.int32)
    low = jnp.asarray(env.spec.action_low, jnp.float32)
    high = jnp.asarray(env.spec.action_high, jnp.float32)
    return lambda params, obs: jnp.clip(network.apply(params, obs, method=network.policy).logits_or_mean,
                                        low, high)


PPO = register(Algorithm(
    name="ppo",
    summary="PPO / mirror learning (Schulman et al. 2017; Kuba et al. 2022): the drift, value-loss and optimiser "
            "slots",
    build=make_ppo_trainer,
    mode_action=ppo_mode_action,
    control="ppo",
    judge_against=("ppo", "dpo"),
    baseline=lambda objective: objective.drift.baseline,  # DPO for a dpo or learned_dpo drift
    gives_activations=True,
    options=PPOOptions,
    hyper=PPOHyper,
    check_objective=check_ppo_objective,
    check_config=check_minibatches,
    network_passes=lambda config: (1 + config.options.update_epochs, config.options.update_epochs),
    exports_to="OnPolicyRL",
    presets={
        # CartPole, Acrobot, Pendulum, bsuite, misc: PureJaxRL's CartPole settings.
        "classic": TrainConfig(),
        "minatar": TrainConfig(
            num_envs=64, num_steps=128, total_timesteps=10_000_000, lr=5e-3, activation="relu",
            algorithm_options=own_options(PPOOptions, num_minibatches=8),
        ),
        "brax": TrainConfig(
            num_envs=2048, num_steps=10, total_timesteps=50_000_000, lr=3e-4, anneal_lr=False,
            hidden_sizes=(256, 256), normalize_obs=True, normalize_reward=True,
            algorithm_options=own_options(PPOOptions, num_minibatches=32, ent_coef=0.0),
        ),
        # Craftax's PPO baseline (Matthews et al., ICML 2024; MichaelTMatthews/Craftax_Baselines ppo.py defaults
        # and models/actor_critic.py ActorCritic): 1024 envs x 64 steps, 1e9 steps, 4 epochs x 8 minibatches, lr 2e-4
        # annealed, gamma 0.99, GAE lambda 0.8, entropy 0.01, max grad norm 1, 3 x 512 tanh towers. Not theirs:
        # optimistic resets.
        "craftax": TrainConfig(
            num_envs=1024, num_steps=64, total_timesteps=1_000_000_000, lr=2e-4, gae_lambda=0.8,
            hidden_sizes=(512, 512, 512),
            algorithm_options=own_options(PPOOptions, update_epochs=4, num_minibatches=8, max_grad_norm=1.0),
        ),
    },
))
