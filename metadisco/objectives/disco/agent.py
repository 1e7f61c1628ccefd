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
    def __call__(self, obs: jax.Array, actions: jax.Array | None = None) -> dict[str, jax.Array]:
        """With `actions` ([...], the actions taken), also "acted": the action model's outputs at those actions
        alone, {"z": [..., Y], "aux_pi": [..., A], "q": [..., bins]}: the per-action outputs selected there (to
        float32 rounding); a loss that reads only those gets a backward pass through one action's heads, not A."""
        x = mlp([nn.Dense(h) for h in self.torso], obs, getattr(nn, self.activation))
        head_init = nn.initializers.truncated_normal(0.01)
        out = {"logits": nn.Dense(self.num_actions, kernel_init=head_init)(x),
               "y": nn.Dense(self.prediction_size, kernel_init=head_init)(x)}
        cell = nn.Dense(self.lstm)(x)
        hidden = jnp.tanh(cell)
        gates_layer = nn.Dense(4 * self.lstm)
        heads = {name: [nn.Dense(self.head_hidden), nn.Dense(size)]
                 for name, size in (("z", self.prediction_size), ("aux_pi", self.num_actions), ("q", self.bins))}

        def action_model(one_hot: jax.Array) -> dict[str, jax.Array]:
            """one_hot [..., K, A] -> each head's output at those K actions, [..., K, size]."""
            root = [jnp.broadcast_to(v[..., None, :], one_hot.shape[:-1] + (self.lstm,)) for v in (hidden, cell)]
            embedding, _ = lstm_cell(gates_layer(jnp.concatenate([one_hot, root[0]], -1)), root[1])  # [..., K, lstm]
            return {name: mlp(layers, embedding, nn.relu) for name, layers in heads.items()}

        every = jnp.broadcast_to(jnp.eye(self.num_actions, dtype=x.dtype), x.shape[:-1] + (self.num_actions,) * 2)
        out.update(action_model(every))
        if actions is not None:
            taken = jax.nn.one_hot(actions, self.num_actions, dtype=x.dtype)[..., None, :]
            out["acted"] = {name: v[..., 0, :] for name, v in action_model(taken).items()}
        return out
