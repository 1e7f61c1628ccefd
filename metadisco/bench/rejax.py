"""rejax's PPO and PQN (pip package `rejax`, the optional `[bench]` extra) at metadisco's settings, for
`bench --peers`.

Same env (gymnax), env count, rollout length, epochs, minibatches, network (tanh 64x64 actor and critic),
learning rate, gradient clip, discount, GAE lambda, clip and loss coefficients as a `TrainConfig`. What differs
is rejax's own design: no learning-rate annealing, separate actor and critic optimisers, and no per-update
metrics. Its periodic evaluation (128 greedy episodes every `eval_freq` steps) is switched off: it is not
training, and metadisco's figures do not include one either. The result is the final actor and critic
parameters, so XLA cannot drop the training as dead code.

rejax 0.1.3 expects gymnax's old 5-value `step` (obs, state, reward, done, info); gymnax 1.x returns
terminated and truncated apart, hence `FiveValueStep`.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from metadisco.core.errors import UserError
from metadisco.trainers.config import TrainConfig


class FiveValueStep:
    """A gymnax 1.x env whose `step` returns (obs, state, reward, terminated | truncated, info)."""

    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        if name.startswith("__") or name == "_env":  # copy / deepcopy probe dunders before _env exists
            raise AttributeError(name)
        return getattr(self._env, name)

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        return obs, state, reward, jnp.logical_or(terminated, truncated), info


def available() -> bool:
    try:
        import rejax  # noqa: F401
    except ImportError:
        return False
    return True


def _rejax_algo(name: str, env_id: str, config: TrainConfig, **settings):
    """rejax's algorithm `name` on gymnax's `env_id` with the settings every on-policy rejax algorithm shares taken
    from `config`, plus its own `settings`."""
    try:
        import rejax
    except ImportError:
        raise UserError("the peer benchmark runs rejax's algorithms, and rejax is not installed: "
                        "pip install -e '.[bench]'") from None
    import gymnax

    env, params = gymnax.make(env_id)
    steps = config.num_updates * config.batch_size
    return getattr(rejax, name).create(
        env=FiveValueStep(env), env_params=params, total_timesteps=steps, eval_freq=steps,
        skip_initial_evaluation=True, num_envs=config.num_envs, num_steps=config.num_steps,
        num_epochs=config.options.update_epochs, num_minibatches=config.options.num_minibatches,
        learning_rate=config.lr, max_grad_norm=config.options.max_grad_norm, gamma=config.gamma, **settings)


def rejax_ppo(env_id: str, config: TrainConfig):
    """A rejax PPO object with `config`'s settings (evaluation off)."""
    algo = _rejax_algo(
        "PPO", env_id, config, gae_lambda=config.gae_lambda, clip_eps=0.2, vf_coef=config.options.vf_coef,
        ent_coef=config.options.ent_coef,
        agent_kwargs={"activation": config.activation, "hidden_layer_sizes": tuple(config.hidden_sizes)})
    return algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(()))


def rejax_train(env_id: str, config: TrainConfig) -> Callable:
    """key -> final (actor, critic) parameters of one rejax PPO run."""
    algo = rejax_ppo(env_id, config)

    def train(key):
        state, _ = algo.train(key)
        return state.actor_ts.params, state.critic_ts.params

    return train


def rejax_population(env_id: str, config: TrainConfig) -> Callable:
    """(clip_eps [P], keys [P, S]) -> parameters: a population of PPO variants x seeds, as rejax sweeps
    hyperparameters (vmap over the algorithm's pytree fields). The peer of a meta-training generation."""
    algo = rejax_ppo(env_id, config)

    def member(clip_eps, keys):
        variant = algo.replace(clip_eps=clip_eps)
        return jax.vmap(lambda k: (lambda s: (s.actor_ts.params, s.critic_ts.params))(variant.train(k)[0]))(keys)

    return jax.vmap(member)


def rejax_pqn(env_id: str, config: TrainConfig):
    """A rejax PQN object with a PQN `config`'s settings (evaluation off): env count, rollout length, epochs,
    minibatches, learning rate, discount, lambda, the epsilon schedule and the hidden sizes (a LayerNorm ReLU MLP
    in both). rejax's own design differs: Adam (PQN's code uses RAdam), no learning-rate decay, elementwise
    gradient clipping (optax.clip) where PQN clips the global norm, no reward scaling, and no truncation
    bootstrap (gymnax's done merges both)."""
    algo = _rejax_algo("PQN", env_id, config, td_lambda=config.gae_lambda, eps_start=config.options.eps_start,
                       eps_end=config.options.eps_finish, exploration_fraction=config.options.eps_decay)
    # rejax's create_agent fixes hidden_layer_sizes=(64, 64); the module is rebuilt at PQN's sizes.
    agent = algo.agent.clone(hidden_layer_sizes=tuple(config.hidden_sizes))
    return algo.replace(agent=agent, eval_callback=lambda algo, ts, rng: jnp.zeros(()))


def rejax_pqn_train(env_id: str, config: TrainConfig) -> Callable:
    """key -> final Q-network parameters of one rejax PQN run."""
    algo = rejax_pqn(env_id, config)

    def train(key):
        state, _ = algo.train(key)
        return state.q_ts.params

    return train


def rejax_dqn(env_id: str, config: TrainConfig, eval_freq: int | None = None):
    """A rejax DQN object with a DQN `config`'s settings: env count, replay size and batch, learning starts (rejax's
    `fill_buffer`, which acts uniformly at random until then), gradient steps per env step of every env, target
    interval (tau 1 is rejax's polyak 0), learning rate, gradient clip, discount, the epsilon schedule (rejax's
    `exploration_fraction` of the run) and the hidden sizes (ReLU). Both minimise 0.5 (Q - target)^2 with Adam;
    rejax's Adam has optax's eps 1e-8 and its done merges termination and truncation (no truncation bootstrap).
    `eval_freq`: env steps between rejax's own greedy evaluations (None: only at the end)."""
    try:
        import rejax
    except ImportError:
        raise UserError("the peer runs rejax's DQN, and rejax is not installed: pip install -e '.[bench]'") from None
    import gymnax

    if config.num_steps != 1:
        raise UserError(f"rejax's DQN steps each env once per iteration; give num_steps=1, not {config.num_steps}")
    options = config.options
    env, params = gymnax.make(env_id)
    steps = config.num_updates * config.batch_size
    algo = rejax.DQN.create(
        env=FiveValueStep(env), env_params=params, total_timesteps=steps, eval_freq=eval_freq or steps,
        skip_initial_evaluation=True, num_envs=config.num_envs, buffer_size=options.buffer_size,
        fill_buffer=options.learning_starts, batch_size=options.buffer_batch, num_epochs=options.gradient_steps,
        target_update_freq=options.target_update_interval, polyak=1.0 - options.tau, learning_rate=config.lr,
        max_grad_norm=options.max_grad_norm, gamma=config.gamma, eps_start=options.eps_start,
        eps_end=options.eps_finish, exploration_fraction=options.eps_anneal_steps / steps, ddqn=options.double_q,
        agent_kwargs={"activation": config.activation})
    # rejax's create_agent fixes hidden_layer_sizes=(64, 64); the module is rebuilt at the config's sizes.
    return algo.replace(agent=algo.agent.clone(hidden_layer_sizes=tuple(config.hidden_sizes)))
