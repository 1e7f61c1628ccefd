"""Learned Policy Gradient (LPG; Oh et al., "Discovering Reinforcement Learning Algorithms", NeurIPS 2020) and its
temporally-aware form (TA-LPG; Jackson et al., ICLR 2024, whose code `EmptyJackson/groove` evolves it with evosax on
gridworlds): the update rule `update_rule: {kind: lpg}`.

The agent has a policy pi(a|s) and a prediction y(s), a categorical vector of `target_width` numbers whose meaning
the rule decides (`LPGAgent`: two MLP towers). Per step of a trajectory the rule reads

    x_t = [r_t, d_t, pi(a_t|s_t), phi(y(s_t)), phi(y(s_t+1)) (0 after an episode's end)] (+ [n / N, log N / 10])

(phi a small shared embedding MLP, tanh, to one number; the last two with `lifetime`, TA-LPG's conditioning on the
agent's progress through its training and its length), runs a GRU backward in time over them, reset where an episode
ended, and outputs per step a scalar pi^_t and a categorical y^_t (relu, then linear heads; y^ a softmax). The agent
then descends

    loss_t = -pi^_t log pi(a_t|s_t) + alpha_y KL(y(s_t) || y^_t)              (pi^, y^ held constant)

which is LPG's update (its eq. 3, groove's `lpg_agent_train_step`). LPG learns from the agent's latest rollouts,
on-policy: train it with replay_capacity = replay_batch = num_envs (each update's trajectories, each once).

Zero meta-parameters are no method (pi^ = 0, y^ uniform: the policy does not move), so there is no paired
baseline; `start_meta` draws the embedding and the GRU at random and keeps the heads at zero, so the ES's start
still does not move the policy but the heads have a gradient. Shapes are time first, as `UpdateRuleInputs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp

from metadisco.core.errors import UserError
from metadisco.objectives.mlp import apply_mlp, random_kernel, zero_mlp
from metadisco.objectives.registry import UPDATE_RULES, Piece, UpdateRuleInputs
from metadisco.rl.nn import gru_cell, mlp, orthogonal


class LPGAgent(nn.Module):
    """obs [..., obs_dim] -> {"logits": [..., A], "y": [..., target_width]} (y's logits): two MLP towers, as
    groove's actor and critic, orthogonal initialisation (gain sqrt 2 hidden, 0.01 on the heads)."""

    num_actions: int
    torso: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    target_width: int = 8

    @nn.compact
    def __call__(self, obs: jax.Array) -> dict[str, jax.Array]:
        act = getattr(nn, self.activation)

        def tower(size):
            layers = [nn.Dense(h, kernel_init=orthogonal(2**0.5)) for h in self.torso]
            return mlp([*layers, nn.Dense(size, kernel_init=orthogonal(0.01))], obs, act)

        return {"logits": tower(self.num_actions), "y": tower(self.target_width)}


@UPDATE_RULES.register("lpg")
@dataclass(frozen=True)
class LPGRule(Piece):
    """LPG / TA-LPG (`lifetime: true`). Defaults are groove's: a 16-wide embedding, a 256-unit GRU, 8 prediction
    numbers, alpha_y 0.5."""

    hidden: int = 256
    embedding: int = 16
    target_width: int = 8
    alpha_y: float = 0.5
    lifetime: bool = False
    positive_options = ("alpha_y",)
    baseline = "none"
    target_coeff = 0.0  # no target parameters: LPG reads the agent as it is
    uses_target = False

    def __post_init__(self):
        for name in ("hidden", "embedding", "target_width"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise UserError(f"update rule 'lpg': {name} must be a positive integer, got {value!r}")
        if self.target_width < 2:
            raise UserError("update rule 'lpg': target_width must be at least 2 (a categorical prediction)")

    @property
    def num_inputs(self) -> int:
        return 5 + (2 if self.lifetime else 0)

    def zero_meta(self) -> dict:
        h, f = self.hidden, self.num_inputs
        zeros = lambda *shape: jnp.zeros(shape, jnp.float32)  # noqa: E731
        return {"embed": zero_mlp((self.target_width, self.embedding, 1)),
                "gru": {"input": zeros(f, 3 * h), "hidden": zeros(h, 3 * h), "bias": zeros(3 * h),
                        "hidden_bias": zeros(h)},
                "pi": {"kernel": zeros(h, 1), "bias": zeros(1)},
                "y": {"kernel": zeros(h, self.target_width), "bias": zeros(self.target_width)}}

    def start_meta(self, key: jax.Array, scale: float) -> dict:
        meta = self.zero_meta()
        keys = jax.random.split(key, 3)
        meta["embed"]["dense_0"]["kernel"] = random_kernel(keys[0], meta["embed"]["dense_0"]["kernel"], scale)
        for k, name in zip(keys[1:], ("input", "hidden"), strict=True):
            meta["gru"][name] = random_kernel(k, meta["gru"][name], scale)
        return meta

    def agent(self, num_actions: int, torso: tuple[int, ...], activation: str) -> LPGAgent:
        return LPGAgent(num_actions, tuple(torso), activation, self.target_width)

    def init_state(self) -> tuple:
        return ()

    def __call__(self, meta, inputs: UpdateRuleInputs, state):
        """((pi^ [T, B], y^ [T, B, target_width]), state) of one batch of trajectories."""
        out = inputs.agent_out
        done = inputs.is_terminal.astype(jnp.float32)
        taken = inputs.actions[:-1]
        pi_taken = jnp.take_along_axis(jax.nn.softmax(out["logits"][:-1]), taken[..., None], axis=-1)[..., 0]
        phi = apply_mlp(meta["embed"], jax.nn.softmax(out["y"]))[..., 0]  # [T + 1, B]
        features = [inputs.rewards, done, pi_taken, phi[:-1], phi[1:] * (1.0 - done)]
        if self.lifetime:
            fraction = jnp.broadcast_to(inputs.progress.fraction, done.shape)
            log_n = jnp.broadcast_to(jnp.log(inputs.progress.num_updates) / 10.0, done.shape)
            features += [fraction, log_n]
        x = jax.lax.stop_gradient(jnp.stack(features, axis=-1))

        def backward(h, step):
            x_t, done_t = step
            h = gru_cell(meta["gru"], x_t, h * (1.0 - done_t)[:, None])  # a new episode starts after an end
            return h, h

        h0 = jnp.zeros((done.shape[1], self.hidden), jnp.float32)
        _, h = jax.lax.scan(backward, h0, (x, done), reverse=True)
        h = jax.nn.relu(h)
        pi_hat = (h @ meta["pi"]["kernel"] + meta["pi"]["bias"])[..., 0]
        y_hat = jax.nn.softmax(h @ meta["y"]["kernel"] + meta["y"]["bias"])
        return (pi_hat, y_hat), state

    def loss(self, inputs: UpdateRuleInputs, agent_out: dict, targets) -> jax.Array:
        pi_hat, y_hat = jax.lax.stop_gradient(targets)
        taken = inputs.actions[:-1]
        log_pi = jnp.take_along_axis(jax.nn.log_softmax(agent_out["logits"][:-1]), taken[..., None], axis=-1)[..., 0]
        log_y = jax.nn.log_softmax(agent_out["y"][:-1])
        kl = jnp.sum(jnp.exp(log_y) * (log_y - jnp.log(y_hat + 1e-8)), axis=-1)  # KL(y || y^)
        return -pi_hat * log_pi + self.alpha_y * kl
