"""A learnable TD loss for DQN: a residual around DQN's loss that reads what Co-Reyes et al.'s search language read.

    loss = 0.5 delta^2 + net(phi(delta), phi(Q), phi(Y), phi(Q'))

with, per sample, Q = Q(s, a) (the inputs' `value`), Y the one-step target r + gamma (1 - d) Q' (`target`),
delta = Q - Y and Q' = Q_target(s', a*) (`next_value`, the target's bootstrap value: max over actions of the
target network's Q for DQN); phi is symlog, sign(x) log(1 + |x|), so that returns in the tens do not saturate the
network's tanh units (`input: raw` feeds them as they are). With `progress` the network also sees n / N.

At zero meta-parameters the residual is exactly 0 with exactly-0 gradients, so the loss is DQN's L2
(`value_loss: {kind: l2}`) bit for bit: meta-training starts from DQN and paired fitness scores against it. The
published losses it can express lie inside its family: DQNReg's delta^2 + 0.1 Q is a residual 0.5 delta^2 + 0.1 Q
(Co-Reyes, Miao, Peng, Real, Levine, Le, Lee, Faust, "Evolving Reinforcement Learning Algorithms", ICLR 2021).
`metadisco plot` draws it against delta at fixed Q (`metadisco.analysis.objective_figures.td_loss_plot`) beside
DQN's and DQNReg's,
and `metadisco distil` fits it to the closed form a delta^2 + b Q + c delta (`td_loss_closed_form`).

Meta-parameters: {"dense_0": {"kernel": [4 (+1), h0], "bias": [h0]}, ..., "dense_k": {"kernel": [h, 1], ...}}.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.core.errors import UserError, unknown_name_error
from metadisco.objectives.learned_value_loss import symlog
from metadisco.objectives.mlp import ResidualMLP
from metadisco.objectives.registry import VALUE_LOSSES, Piece, Progress, ValueLossInputs
from metadisco.objectives.value_loss import l2_value_loss

INPUTS = ("symlog", "raw")
FEATURES = ("delta", "q", "target", "next_value")  # the network's inputs, in order


def td_features(inputs: ValueLossInputs) -> list[jax.Array]:
    """[delta, Q, Y, Q'] per sample (each of the inputs' batch shape); a `UserError` without the target's parts."""
    if inputs.next_value is None:
        raise UserError("value loss learned_td reads the TD target's bootstrap value (next_value), which only a "
                        "one-step TD trainer gives; use it with algorithm dqn or ddqn")
    return [inputs.value - inputs.target, inputs.value, inputs.target, inputs.next_value]


@VALUE_LOSSES.register("learned_td")
@dataclass(frozen=True)
class LearnedTDLoss(ResidualMLP, Piece):
    """DQN's 0.5 delta^2 plus a learned network of (delta, Q, Y, Q'); zero meta-parameters are DQN bit for bit."""

    hidden: tuple[int, ...] = (32, 32)
    progress: bool = False
    input: str = "symlog"
    num_features = len(FEATURES)
    label = "value loss 'learned_td'"
    reads_target_parts = True

    def __post_init__(self):
        super().__post_init__()
        if self.input not in INPUTS:
            raise unknown_name_error("learned_td input", self.input, INPUTS)

    def __call__(self, meta, inputs: ValueLossInputs, progress: Progress) -> jax.Array:
        features = td_features(inputs)
        if self.input == "symlog":
            features = [symlog(x) for x in features]
        return l2_value_loss(inputs.value, inputs.target) + self.residual(meta, features, progress.fraction)


def td_loss_closed_form(piece, meta, progress: Progress, q_max: float = 20.0, delta_max: float = 8.0,
                        points: int = 41) -> dict[str, float]:
    """Least-squares fit of a TD loss to a delta^2 + b Q + c delta + d over a grid of Q in [0, q_max] and delta in
    [-delta_max, delta_max] (`points` per axis; Y = Q - delta, Q' = Y: a reward-free step, discount 1): the family of
    DQN's loss (a = 0.5) and DQNReg's (a = 1, b = 0.1). {"a", "b", "c", "d", "r2"}: r2 is the fraction of the loss's
    variance on the grid that the form explains; DQNReg's weight is b / a (under Adam the scale a barely matters)."""
    q, delta = jnp.meshgrid(jnp.linspace(0.0, q_max, points), jnp.linspace(-delta_max, delta_max, points))
    q, delta = q.ravel().astype(jnp.float32), delta.ravel().astype(jnp.float32)
    target = q - delta
    inputs = ValueLossInputs(q, q, target, target, jnp.ones_like(q))
    loss = piece(meta, inputs, progress)
    basis = jnp.stack([jnp.square(delta), q, delta, jnp.ones_like(q)], axis=-1)
    coef, *_ = jnp.linalg.lstsq(basis, loss)
    total = jnp.sum(jnp.square(loss - jnp.mean(loss)))
    r2 = 1.0 - jnp.sum(jnp.square(loss - basis @ coef)) / jnp.maximum(total, 1e-30)
    return {"a": float(coef[0]), "b": float(coef[1]), "c": float(coef[2]), "d": float(coef[3]), "r2": float(r2)}
