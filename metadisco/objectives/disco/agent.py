"""The agent Disco103 trains: DiscoRL's prediction agent, whose outputs are what its update rule writes targets for."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from metadisco.rl.nn import lstm_cell, mlp


class PredictionAgent(nn.Module):
    """DiscoRL's agent (`networks/nets.py` MLP with the `action_models.py` LSTM model, as its eval notebook builds
    it), obs [..., obs_dim] -> {"logits": [..., A], "y": [..., Y], "z": [..., A, Y], "aux_pi": [..., A, A],
    "q": [..., A, bins]}.

    An MLP torso (ReLU by default; linear last layer, as Haiku's MLP) feeds linear heads for the logits and y
    (weights drawn with std 0.01); an action model predicts per action: its root is (tanh(c), c) with
    c = Linear(lstm)(torso), one LSTM step (Haiku's convention) on each action's one-hot gives that action's
    embedding, and MLP heads (hidden `head_hidden`, ReLU) map it to z, the auxiliary next-step policy and Q's
    logits over `bins` bins."""

    num_actions: int
    torso: tuple[int, ...] = (512, 512)
    activation: str = "relu"
    lstm: int = 128
    head_hidden: int = 128
    prediction_size: int = 600
    bins: int = 601

    @nn.compact
    def __call__(self, obs: jax.Array) -> dict[str, jax.Array]:
        x = mlp([nn.Dense(h) for h in self.torso], obs, getattr(nn, self.activation))
        head_init = nn.initializers.truncated_normal(0.01)
        out = {"logits": nn.Dense(self.num_actions, kernel_init=head_init)(x),
               "y": nn.Dense(self.prediction_size, kernel_init=head_init)(x)}
        cell = nn.Dense(self.lstm)(x)
        hidden = jnp.tanh(cell)
        actions = jnp.eye(self.num_actions, dtype=x.dtype)
        expand = lambda v: jnp.broadcast_to(v[..., None, :], v.shape[:-1] + (self.num_actions, v.shape[-1]))  # noqa: E731
        hidden, cell = expand(hidden), expand(cell)
        gates = nn.Dense(4 * self.lstm)(jnp.concatenate([jnp.broadcast_to(actions, hidden.shape[:-1] +
                                                                          (self.num_actions,)), hidden], -1))
        embedding, _ = lstm_cell(gates, cell)  # [..., A, lstm]
        for name, size in (("z", self.prediction_size), ("aux_pi", self.num_actions), ("q", self.bins)):
            out[name] = mlp([nn.Dense(self.head_hidden), nn.Dense(size)], embedding, nn.relu)
        return out
