"""A new algorithm in one module, as `docs/guide/algorithms.md` describes: A2C (Mnih et al. 2016, "Asynchronous
Methods for Deep Reinforcement Learning", synchronous form), one gradient step per rollout on the whole batch with
GAE advantages, on PPO's actor-critic network. `tests/trainers/test_example_algorithm.py` registers and trains it.

It reuses what every algorithm shares: `assemble_trainer` (init / step / train, the learning-rate schedule, the
objective's optimiser), the episode logging, GAE, and PPO's network and greedy action; it adds its settings (the
loss's coefficients and the gradient clip, traced), its update and its record, nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco import Algorithm, TrainConfig, register_algorithm
from metadisco.core.errors import UserError
from metadisco.objectives.registry import ValueLossInputs
from metadisco.rl.gae import gae
from metadisco.trainers.base import Metrics, assemble_trainer
from metadisco.trainers.config import check_non_negative, check_positive
from metadisco.trainers.episodes import step_sums, update_metrics
from metadisco.trainers.hyper import split_config
from metadisco.trainers.networks import make_network
from metadisco.trainers.ppo import PPOHyper, ppo_mode_action


@dataclass(frozen=True)
class A2COptions:
    """A2C's own settings: the loss is the actor's + vf_coef x the value loss - ent_coef x the entropy, the
    gradient's norm clipped at max_grad_norm; all three traced, as PPO's are (its `PPOHyper` names them)."""

    ent_coef: float | None = 0.01
    vf_coef: float | None = 0.5
    max_grad_norm: float | None = 0.5

    def validate(self) -> None:
        check_non_negative("ent_coef", self.ent_coef)
        check_non_negative("vf_coef", self.vf_coef)
        check_positive("max_grad_norm", self.max_grad_norm)


def make_a2c_trainer(config: TrainConfig, env, objective):
    config, defaults = split_config(config)
    network = make_network(env.spec, config.hidden_sizes, config.activation)

    def make_update(meta, hyper, envs, optimizer):
        def update(state, _):
            key, noise_key, step_key = jax.random.split(state.key, 3)
            noise = jax.random.gumbel(noise_key, (config.num_steps, config.num_envs, env.spec.action_size))
            step_keys = jax.random.split(step_key, (config.num_steps, config.num_envs))

            def env_step(carry, xs):
                env_state, obs = carry
                policy, _ = network.apply(state.params, obs)
                action = policy.sample_from_noise(xs[0])
                env_state, out = envs.step(xs[1], env_state, action)
                return (env_state, out.obs), ((obs, action, out.reward, out.terminated, out.truncated, out.final_obs),
                                              step_sums(out))

            (env_state, obs), ((o, a, r, term, trunc, final), episodes) = jax.lax.scan(
                env_step, (state.env_state, state.obs), (noise, step_keys))
            values = network.apply(state.params, o, method=network.value)
            next_values = network.apply(state.params, final, method=network.value)
            adv, targets = gae(r, values, next_values, term, trunc, hyper.gamma, hyper.gae_lambda)

            def loss_fn(params):
                policy, value = network.apply(params, o)
                actor = -jnp.mean(policy.log_prob(a) * jax.lax.stop_gradient(adv))
                critic = jnp.mean(objective.value_loss(meta["value_loss"], ValueLossInputs(value, values, targets),
                                                       None))
                entropy = jnp.mean(policy.entropy())
                return actor + hyper.vf_coef * critic - hyper.ent_coef * entropy, (actor, critic, entropy)

            grads, (actor, critic, entropy) = jax.grad(loss_fn, has_aux=True)(state.params)
            updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
            params = jax.tree.map(lambda p, u: p + u, state.params, updates)
            metrics = Metrics(**update_metrics(episodes),
                              losses={"actor_loss": actor, "value_loss": critic, "entropy": entropy}, diagnostics={})
            return state._replace(params=params, opt_state=opt_state, env_state=env_state, obs=obs, key=key,
                                  update=state.update + 1), metrics

        return update

    return assemble_trainer(config, defaults, env, objective, network, make_update)


def check_a2c_objective(config, objective) -> None:
    if objective.algorithm != "a2c":
        raise UserError(f"algorithm a2c needs an objective that names it (algorithm: {{kind: a2c}}); this one is for "
                        f"{objective.algorithm}")


A2C = register_algorithm(Algorithm(
    name="a2c",
    summary="A2C (Mnih et al. 2016, synchronous): one gradient step per rollout, GAE advantages",
    build=make_a2c_trainer,
    mode_action=ppo_mode_action,
    control="ppo",  # no built-in objective of its own: a test example
    slots=("value_loss", "optimizer"),  # no trust region: a learnable drift is refused (`check_calls`)
    options=A2COptions,
    hyper=PPOHyper,  # lr, gamma, gae_lambda and these options: the same traced settings as PPO's
    check_objective=check_a2c_objective,
    optimizer_steps=lambda config: 1,
    presets={"classic": TrainConfig(algorithm="a2c", num_envs=16, num_steps=8, total_timesteps=200_000, lr=7e-4,
                                    anneal_lr=False)},
))
