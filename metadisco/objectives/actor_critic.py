"""The handcrafted actor-critic update rule (DeepMind's `disco_rl` `update_rules/actor_critic.py`, with its
settings `agent.get_settings_actor_critic`), in the update-rule slot's interface: the control that learned update
rules (LPG, Disco103) are judged and paired against, as every other slot has its handcrafted baseline.

Per learner step on B trajectories of T steps (time first), with v = h^-1(E[softmax(v logits) over 601 bins on
[-300, 300]]) (h the signed hyperbolic squash), rho_t = pi(a_t) / mu(a_t) and discount_t = gamma (1 - terminal_t):

    err, adv = V-trace(v_t, v_t+1, r_t, discount_t, rho_t, lambda)      (`metadisco.rl.vtrace`)
    td_t     = err_t  (the value target is v_t + err_t)
    loss_t   = pg_cost (-log pi(a_t) adv_t) + value_cost CE(v logits_t, two-hot h(v_t + td_t))
               - entropy_cost H(pi_t)

with adv and td as constants, each optionally normalised by an EMA of its moments (`normalize_adv`,
`normalize_td`; both off in DeepMind's settings; the EMAs are the rule's state and advance at every step either
way). Its agent is a torso MLP with a policy head and a 601-bin value head (DeepMind's settings use an LSTM agent;
metadisco's update-rule agents are MLPs). It has no meta-parameters: it is a handcrafted rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp

from metadisco.objectives.disco.rule import EMA_DECAY, ema_init, ema_normalise, ema_update
from metadisco.objectives.registry import UPDATE_RULES, Piece, UpdateRuleInputs
from metadisco.rl.categorical_value import categorical_value, categorical_value_loss
from metadisco.rl.nn import mlp
from metadisco.rl.vtrace import vtrace

MAX_ABS_VALUE = 300.0
NUM_BINS = 601


class ActorCriticAgent(nn.Module):
    """obs [..., obs_dim] -> {"logits": [..., A], "v": [..., num_bins]}: a shared torso MLP and two linear heads."""

    num_actions: int
    torso: tuple[int, ...] = (64, 64)
    activation: str = "relu"
    num_bins: int = NUM_BINS

    @nn.compact
    def __call__(self, obs: jax.Array) -> dict[str, jax.Array]:
        act = getattr(nn, self.activation)
        h = mlp([nn.Dense(s) for s in self.torso], obs, act, activate_last=True)
        return {"logits": nn.Dense(self.num_actions)(h), "v": nn.Dense(self.num_bins)(h)}


def log_pi_taken(logits: jax.Array, actions: jax.Array) -> jax.Array:
    return jnp.take_along_axis(jax.nn.log_softmax(logits), actions[..., None], axis=-1)[..., 0]


@UPDATE_RULES.register("actor_critic")
@dataclass(frozen=True)
class ActorCriticRule(Piece):
    """disco_rl's actor-critic rule with DeepMind's settings (costs 1 / 0.5 / 0.2, categorical value, no
    normalisation); discount and lambda come from the trainer's gamma and gae_lambda (0.997, 0.95 in DeepMind's
    settings and the update_rule presets)."""

    pg_cost: float = 1.0
    value_cost: float = 0.5
    entropy_cost: float = 0.2
    normalize_adv: bool = False
    normalize_td: bool = False
    baseline = "actor-critic"
    target_coeff = 0.0  # the rule never reads target parameters
    uses_target = False

    def agent(self, num_actions: int, torso: tuple[int, ...], activation: str) -> ActorCriticAgent:
        return ActorCriticAgent(num_actions, tuple(torso), activation)

    def init_state(self):
        return {"adv_ema": ema_init(), "td_ema": ema_init()}

    def __call__(self, meta, inputs: UpdateRuleInputs, state):
        """(value estimates and advantages, as constants; the advanced EMAs) of one learner step's batch."""
        del meta
        out = inputs.agent_out
        values = categorical_value(out["v"], MAX_ABS_VALUE)  # [T+1, B]
        taken = inputs.actions[:-1]
        rho = jnp.exp(log_pi_taken(out["logits"][:-1], taken) - log_pi_taken(inputs.behaviour_logits[:-1], taken))
        rho = jax.lax.stop_gradient(rho)
        discounts = (1.0 - inputs.is_terminal.astype(jnp.float32)) * inputs.discount
        vmap = jax.vmap(lambda *a: vtrace(*a, inputs.lam), in_axes=1, out_axes=1)  # per trajectory
        errors, adv = vmap(values[:-1], values[1:], inputs.rewards, discounts, rho)
        td = errors
        adv_ema = ema_update(state["adv_ema"], adv, EMA_DECAY)
        td_ema = ema_update(state["td_ema"], td, EMA_DECAY)
        targets = {"adv": adv, "normalized_adv": ema_normalise(adv_ema, adv), "td": td,
                   "normalized_td": ema_normalise(td_ema, td, subtract_mean=False), "values": values}
        return targets, {"adv_ema": adv_ema, "td_ema": td_ema}

    def loss(self, inputs: UpdateRuleInputs, agent_out: dict, targets) -> jax.Array:
        """Per-step loss [T, B] of the agent's outputs."""
        targets = jax.lax.stop_gradient(targets)
        adv = targets["normalized_adv"] if self.normalize_adv else targets["adv"]
        td = targets["normalized_td"] if self.normalize_td else targets["td"]
        logits = agent_out["logits"][:-1]
        pg = -log_pi_taken(logits, inputs.actions[:-1]) * adv
        v_logits = agent_out["v"][:-1]
        value_target = jax.lax.stop_gradient(categorical_value(v_logits, MAX_ABS_VALUE) + td)
        value = categorical_value_loss(v_logits, value_target, MAX_ABS_VALUE)
        log_pi = jax.nn.log_softmax(logits)
        entropy = -jnp.sum(jnp.exp(log_pi) * log_pi, axis=-1)
        return self.pg_cost * pg + self.value_cost * value - self.entropy_cost * entropy
