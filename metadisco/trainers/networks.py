"""Agent networks: the actor-critic of PPO (separate MLP towers for the policy and the value, PureJaxRL's layout),
and the Q-network of PQN (an MLP with LayerNorm before every activation). The agent a learned update rule trains is
the rule's own (`UpdateRule.agent`, e.g. `metadisco.objectives.disco.agent`).

Discrete actions get categorical logits; continuous actions a Gaussian mean with a state-independent log-std
parameter. Orthogonal initialisation with gains sqrt(2) (hidden), 0.01 (policy head) and 1 (value head). The
Q-network keeps flax's default initialisation, as PQN's own code (mttga/purejaxql) does.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from metadisco.envs import EnvSpec
from metadisco.rl import distributions as D
from metadisco.rl.nn import mlp, orthogonal

_ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}


class Policy(NamedTuple):
    """Output of the actor: logits [..., A] (discrete) or mean and log_std [..., D] (continuous)."""

    discrete: bool
    logits_or_mean: jax.Array
    log_std: jax.Array | None

    def sample(self, key: jax.Array) -> jax.Array:
        if self.discrete:
            return D.categorical_sample(key, self.logits_or_mean)
        return D.gaussian_sample(key, self.logits_or_mean, self.log_std)

    def noise_shape(self) -> tuple[int, ...]:
        """Shape of the standard noise `sample_from_noise` takes (Gumbel for discrete, normal otherwise)."""
        return self.logits_or_mean.shape

    def sample_from_noise(self, noise: jax.Array) -> jax.Array:
        """A sample given pre-drawn noise: Gumbel-max for logits, mean + std * noise for a Gaussian.

        Drawing the noise for a whole rollout at once, outside the step loop, is much cheaper on CPU than
        one random call per step.
        """
        if self.discrete:
            return jnp.argmax(self.logits_or_mean + noise, axis=-1).astype(jnp.int32)
        return self.logits_or_mean + jnp.exp(self.log_std) * noise

    def log_prob(self, action: jax.Array) -> jax.Array:
        if self.discrete:
            return D.categorical_log_prob(self.logits_or_mean, action)
        return D.gaussian_log_prob(self.logits_or_mean, self.log_std, action)

    def entropy(self) -> jax.Array:
        if self.discrete:
            return D.categorical_entropy(self.logits_or_mean)
        return D.gaussian_entropy(jnp.broadcast_to(self.log_std, self.logits_or_mean.shape))


class ActorCritic(nn.Module):
    """obs [..., obs_dim] -> (Policy, value [...])."""

    action_size: int
    discrete: bool
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"

    def setup(self):
        act = _ACTIVATIONS[self.activation]
        self._act = act
        self.policy_head = nn.Dense(self.action_size, kernel_init=orthogonal(0.01),
                                    bias_init=nn.initializers.zeros)
        self.value_head = nn.Dense(1, kernel_init=orthogonal(1.0),
                                   bias_init=nn.initializers.zeros)
        self.actor_layers = [nn.Dense(s, kernel_init=orthogonal(math.sqrt(2)),
                                      bias_init=nn.initializers.zeros) for s in self.hidden_sizes]
        self.critic_layers = [nn.Dense(s, kernel_init=orthogonal(math.sqrt(2)),
                                       bias_init=nn.initializers.zeros) for s in self.hidden_sizes]
        if not self.discrete:
            self.log_std = self.param("log_std", nn.initializers.zeros, (self.action_size,))

    def _tower(self, layers, x):
        return mlp(layers, x, self._act, activate_last=True)

    def value(self, obs: jax.Array) -> jax.Array:
        return self.value_head(self._tower(self.critic_layers, obs))[..., 0]

    def policy(self, obs: jax.Array) -> Policy:
        out = self.policy_head(self._tower(self.actor_layers, obs))
        return Policy(self.discrete, out, None if self.discrete else self.log_std)

    def __call__(self, obs: jax.Array) -> tuple[Policy, jax.Array]:
        return self.policy(obs), self.value(obs)


def make_network(spec: EnvSpec, hidden_sizes: tuple[int, ...], activation: str) -> ActorCritic:
    return ActorCritic(spec.action_size, spec.discrete, tuple(hidden_sizes), activation)


def _tower_layers(params) -> dict[str, tuple[bool, float]]:
    """{layer name: (is actor, i / (L - 1))} of an ActorCritic's params: each tower's hidden layers in order,
    then its head, then (actor, continuous actions) the log-std, as OPEN counts its separate networks' layers."""
    names = set(params["params"])
    out = {}
    for actor, prefix, tail in ((True, "actor_layers_", ["policy_head", "log_std"]),
                                (False, "critic_layers_", ["value_head"])):
        hidden = sorted((n for n in names if n.startswith(prefix)), key=lambda n: int(n[len(prefix):]))
        layers = hidden + [n for n in tail if n in names]
        for i, name in enumerate(layers):
            out[name] = (actor, i / max(len(layers) - 1, 1))
    return out


def optimizer_layout(params) -> tuple[dict, dict]:
    """(actor_mask, layer_proportion) of an ActorCritic's params, pytrees like params of Python floats: 1.0 on
    the actor's leaves, 0.0 on the critic's; i / (L - 1) of the leaf's layer in its own tower
    (`metadisco.objectives.registry.OptimizerContext`)."""
    layers = _tower_layers(params)
    unknown = sorted(set(params["params"]) - set(layers))
    if unknown:
        raise ValueError(f"optimizer_layout: {unknown[0]!r} is neither the actor's nor the critic's")
    mask = {"params": {n: jax.tree.map(lambda _, a=layers[n][0]: float(a), t) for n, t in params["params"].items()}}
    prop = {"params": {n: jax.tree.map(lambda _, q=layers[n][1]: q, t) for n, t in params["params"].items()}}
    return mask, prop


def unit_activations(network: ActorCritic, params, intermediates) -> dict:
    """Each layer's mean |activation| per unit over the batch, as a pytree like params (a layer's kernel and bias
    get the same [units] vector), from `network.apply(..., capture_intermediates=True)`'s intermediates: hidden
    layers after their activation, heads as they are (logits, value), the log-std as mean(exp(log_std)) [1]
    (OPEN's `train.py` Actor / Critic)."""
    act = _ACTIVATIONS[network.activation]
    out = {}
    for name, leaves in params["params"].items():
        if name == "log_std":
            out[name] = jnp.mean(jnp.exp(leaves), keepdims=True).reshape(1)
            continue
        y = intermediates[name]["__call__"][0]
        if not name.endswith("_head"):
            y = act(y)
        unit = jnp.mean(jnp.abs(y).reshape(-1, y.shape[-1]), axis=0)
        out[name] = jax.tree.map(lambda _, u=unit: u, leaves)
    return {"params": out}


class QNetwork(nn.Module):
    """obs [..., obs_dim] -> Q-values [..., num_actions]: Dense -> LayerNorm -> activation per hidden layer, then a
    linear head (PQN, Gallici, Fellows et al. 2025: LayerNorm is what keeps TD without a target network stable)."""

    num_actions: int
    hidden_sizes: tuple[int, ...] = (256, 256)
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        def hidden(size):
            dense, norm = nn.Dense(size), nn.LayerNorm()
            return lambda x: norm(dense(x))

        layers = [hidden(s) for s in self.hidden_sizes] + [nn.Dense(self.num_actions)]
        return mlp(layers, obs, _ACTIVATIONS[self.activation])


def make_q_network(spec: EnvSpec, hidden_sizes: tuple[int, ...], activation: str) -> QNetwork:
    if not spec.discrete:
        from metadisco.core.errors import UserError

        raise UserError(f"{spec.env_id} has continuous actions ({spec.describe_actions()}); algorithm pqn needs "
                        "discrete actions (use algorithm ppo)")
    return QNetwork(spec.action_size, tuple(hidden_sizes), activation)

