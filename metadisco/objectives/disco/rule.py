"""Disco103's update rule around its meta-network (DeepMind's `update_rules/disco.py` `DiscoUpdateRule`,
`value_fns/value_utils.py`, `utils.MovingAverage`): the value estimates it reads, its meta-state, and the agent's
loss. Settings are Disco103's (`agent.get_settings_disco`).

The agent predicts, per step: policy logits [A], y [600], per action z [A, 600], an auxiliary next-policy aux_pi
[A, A] and a categorical Q [A, 601] (bins evenly spaced on h(+-300), h the signed hyperbolic squash).

    q, v     = h^-1(E[bins]) of Q's logits; v = sum_a pi(a) q(a)        (online; the same from target parameters)
    Q^_t     = Retrace(lambda 0.95, gamma 0.997) from the target's q and v, c_t = lambda min(1, pi/mu)
    adv_t    = Q^_t - v_target_t;  td_t = Q^_t - q_t(a_t);  each normalised by an EMA (decay 0.99) of its moments
    pi^, y^, z^, m' = meta_net(...)
    loss_t   = KL(pi^_t || pi_t) + KL(y^_t || y_t) + KL(z^_t || z_t(a_t)) + KL(pi_t+1 || aux_pi_t(a_t)) (not at ends)
             + 0.2 CE(Q_t(a_t), two-hot h(q_t(a_t) + td_t))
    target parameters <- 0.9 target + 0.1 online, after the update's meta-network step

Shapes are time first: agent outputs [T+1, B, ...], rewards and terminals [T, B].
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from metadisco.objectives.disco.meta_net import LSTMState, MetaNetInputs, initial_meta_rnn_state, meta_net, select
from metadisco.rl.categorical_value import categorical_kl, categorical_value, categorical_value_loss
from metadisco.rl.retrace import off_policy_returns

DISCOUNT = 0.997
TD_LAMBDA = 0.95
MAX_ABS_VALUE = 300.0
NUM_BINS = 601
EMA_DECAY = 0.99
EMA_EPS = 1e-6
TARGET_COEFF = 0.9
COSTS = {"pi": 1.0, "y": 1.0, "z": 1.0, "aux_policy": 1.0, "value": 0.2}


class EmaState(NamedTuple):
    """An exponential moving average of a quantity's first two moments, debiased as Adam's."""

    moment1: jax.Array
    moment2: jax.Array
    decay_product: jax.Array


def ema_init() -> EmaState:
    return EmaState(jnp.zeros((), jnp.float32), jnp.zeros((), jnp.float32), jnp.ones((), jnp.float32))


def ema_update(state: EmaState, x: jax.Array, decay: float = EMA_DECAY) -> EmaState:
    return EmaState(decay * state.moment1 + (1 - decay) * jnp.mean(x),
                    decay * state.moment2 + (1 - decay) * jnp.mean(jnp.square(x)),
                    state.decay_product * decay)


def ema_normalise(state: EmaState, x: jax.Array, subtract_mean: bool = True, eps: float = EMA_EPS) -> jax.Array:
    debias = 1.0 / (1 - state.decay_product)
    mean = state.moment1 * debias
    var = jnp.maximum(0.0, state.moment2 * debias - jnp.square(mean))
    return ((x - mean) if subtract_mean else x) / (jnp.sqrt(var + 1e-12) + eps)


class MetaState(NamedTuple):
    """What the rule carries across an agent's updates (besides the target parameters, which the trainer keeps)."""

    rnn: LSTMState
    adv_ema: EmaState
    td_ema: EmaState


def initial_meta_state() -> MetaState:
    return MetaState(initial_meta_rnn_state(), ema_init(), ema_init())


class Rollout(NamedTuple):
    """B trajectories of T steps, time first: actions [T+1, B] (the last one unused but for the agent's own
    next-step outputs), rewards and is_terminal [T, B] (r_t and whether the episode ended after a_t), and the agent's
    logits when it acted, [T+1, B, A]."""

    actions: jax.Array
    rewards: jax.Array
    is_terminal: jax.Array
    behaviour_logits: jax.Array


class ValueEstimates(NamedTuple):
    v_scalar: jax.Array  # [T+1, B] online v
    q_value: jax.Array  # [T+1, B, A] online q
    target_q_value: jax.Array  # [T+1, B, A]
    q_target: jax.Array  # [T, B] Retrace target of q(a_t)
    adv: jax.Array  # [T, B]
    normalized_adv: jax.Array
    qv_adv: jax.Array  # [T+1, B, A] target q - target v
    normalized_qv_adv: jax.Array
    q_td: jax.Array  # [T, B] Q^_t - q_t(a_t)
    normalized_q_td: jax.Array


def value_estimates(rollout: Rollout, agent_out: dict, target_out: dict, adv_ema: EmaState, td_ema: EmaState,
                    discount: float = DISCOUNT, lambda_: float = TD_LAMBDA
                    ) -> tuple[ValueEstimates, EmaState, EmaState]:
    """DeepMind's `value_utils.get_value_outs` as Disco103 calls it (Q-values, categorical, squashed, none dropped)."""
    pi = jax.nn.softmax(agent_out["logits"])
    q_values = categorical_value(agent_out["q"], MAX_ABS_VALUE)  # [T+1, B, A]
    target_q_values = categorical_value(target_out["q"], MAX_ABS_VALUE)
    values = jnp.sum(pi * q_values, axis=2)
    target_values = jnp.sum(pi * target_q_values, axis=2)  # the online policy weighs the target's q, as DeepMind's

    actions = rollout.actions[:-1]
    log_pi = jax.nn.log_softmax(agent_out["logits"][:-1])
    log_mu = jax.nn.log_softmax(rollout.behaviour_logits[:-1])
    rho = jax.lax.stop_gradient(jnp.exp(select(log_pi, actions) - select(log_mu, actions)))

    q_a = select(q_values[:-1], actions)
    target_q_a = select(target_q_values[:-1], actions)
    discounts = (1.0 - rollout.is_terminal.astype(rollout.rewards.dtype)) * discount
    first = lambda x: jnp.concatenate([jnp.zeros_like(x[:1]), x], axis=0)  # noqa: E731  Retrace's dummy step 0
    clipped_rho = jnp.minimum(rho, 1.0)
    q_target = off_policy_returns(target_q_a, target_values, first(rollout.rewards), first(discounts),
                                  lambda_ * clipped_rho)[1:]
    qv_adv = target_q_values - target_values[..., None]
    adv = q_target - target_values[:-1]
    q_td = q_target - q_a

    adv_ema = ema_update(adv_ema, adv)
    td_ema = ema_update(td_ema, q_td)
    estimates = ValueEstimates(
        v_scalar=values, q_value=q_values, target_q_value=target_q_values, q_target=q_target, adv=adv,
        normalized_adv=ema_normalise(adv_ema, adv), qv_adv=qv_adv, normalized_qv_adv=ema_normalise(adv_ema, qv_adv),
        q_td=q_td, normalized_q_td=ema_normalise(td_ema, q_td, subtract_mean=False))
    return estimates, adv_ema, td_ema


def unroll_meta_net(meta_params: dict, meta_state: MetaState, rollout: Rollout, agent_out: dict, target_out: dict,
                    discount: float = DISCOUNT, lambda_: float = TD_LAMBDA) -> tuple[dict, ValueEstimates, MetaState]:
    """The update's targets (meta_net's pi, y, z) with the value estimates, and the rule's next meta-state.
    `agent_out` and `target_out` are the agent's outputs on the rollout under its current and target parameters."""
    estimates, adv_ema, td_ema = value_estimates(rollout, agent_out, target_out, meta_state.adv_ema,
                                                 meta_state.td_ema, discount, lambda_)
    inputs = MetaNetInputs(
        actions=rollout.actions, rewards=rollout.rewards, is_terminal=rollout.is_terminal, agent_out=agent_out,
        behaviour_logits=rollout.behaviour_logits, target_out=target_out, v_scalar=estimates.v_scalar,
        adv=estimates.adv, normalized_adv=estimates.normalized_adv, q=estimates.target_q_value,
        qv_adv=estimates.qv_adv, normalized_qv_adv=estimates.normalized_qv_adv)
    meta_out, rnn = meta_net(meta_params, meta_state.rnn, inputs)
    return meta_out, estimates, MetaState(rnn, adv_ema, td_ema)


def acted_outputs(agent_out: dict, actions: jax.Array) -> dict:
    """The action model's outputs at the actions taken, {"z", "aux_pi", "q"}: [T+1, B, ...] each. The agent's own
    "acted" outputs where it computed them (`PredictionAgent(obs, actions)`, which runs the heads at a_t alone, so
    that the loss's gradient does not pass through the other actions' heads), else selected from its outputs for
    every action; the same numbers either way, to float32 rounding."""
    if "acted" in agent_out:
        return agent_out["acted"]
    return {name: select(agent_out[name], actions) for name in ("z", "aux_pi", "q")}


def agent_loss(rollout: Rollout, agent_out: dict, meta_out: dict, estimates: ValueEstimates,
               costs: dict = COSTS) -> jax.Array:
    """Per-step loss [T, B] of the agent's outputs against the rule's targets (DeepMind's `agent_loss` plus
    `agent_loss_no_meta`); the targets are constants here (no meta-gradient flows through them)."""
    pi_hat, y_hat, z_hat, q_td = jax.lax.stop_gradient((meta_out["pi"], meta_out["y"], meta_out["z"],
                                                        estimates.q_td))
    acted = acted_outputs(agent_out, rollout.actions)
    logits = agent_out["logits"][:-1]
    pi_loss = categorical_kl(pi_hat, logits)
    y_loss = categorical_kl(y_hat, agent_out["y"][:-1])
    z_loss = categorical_kl(z_hat, acted["z"][:-1])
    aux_loss = categorical_kl(jax.lax.stop_gradient(agent_out["logits"][1:]), acted["aux_pi"][:-1])
    aux_loss = aux_loss * (1.0 - rollout.is_terminal.astype(aux_loss.dtype))
    q_logits = acted["q"][:-1]  # [T, B, bins]
    value_target = jax.lax.stop_gradient(categorical_value(q_logits, MAX_ABS_VALUE) + q_td)
    value_loss = categorical_value_loss(q_logits, value_target, MAX_ABS_VALUE)
    return (costs["pi"] * pi_loss + costs["y"] * y_loss + costs["z"] * z_loss + costs["aux_policy"] * aux_loss
            + costs["value"] * value_loss)


def update_target(target_params, params, coeff: float = TARGET_COEFF):
    """Polyak averaging of the agent's target parameters, after each update's meta-network step."""
    return jax.tree.map(lambda old, new: old * coeff + (1.0 - coeff) * new, target_params, params)
