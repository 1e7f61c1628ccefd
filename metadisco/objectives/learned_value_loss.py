"""A learned value loss (PureJaxRL blog, Lu 2023), as a residual around L2.

    loss(v, target) = 0.5 (v - target)^2 + net([v - target, (progress)])

net = Dense(64) -> tanh -> Dense(64) -> tanh -> Dense(1), with biases. All-zero meta-parameters make net 0
everywhere (and its gradient 0), so the loss is L2 exactly, values and gradients bit for bit; the ES starts
there. With `progress`, the network also sees the training fraction n / N, so the loss can change as
training proceeds.

Meta-parameters: {"dense_0": {"kernel": [inputs, h0], "bias": [h0]}, ..., "dense_k": {"kernel": [h, 1], ...}}.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from metadisco.objectives.mlp import apply_mlp, check_hidden_sizes, start_mlp, zero_mlp
from metadisco.objectives.registry import VALUE_LOSSES, Piece, Progress, ValueLossInputs
from metadisco.objectives.value_loss import l2_value_loss


@VALUE_LOSSES.register("learned")
@dataclass(frozen=True)
class LearnedValueLoss(Piece):
    """L2 plus a learned network of (v - target) and, optionally, training progress."""

    hidden: tuple[int, ...] = (64, 64)
    progress: bool = False

    def __post_init__(self):
        object.__setattr__(self, "hidden", check_hidden_sizes(self.hidden, "value loss 'learned'"))

    @property
    def sizes(self) -> tuple[int, ...]:
        return (2 if self.progress else 1, *self.hidden, 1)

    def zero_meta(self) -> dict:
        return zero_mlp(self.sizes)

    def start_meta(self, key, scale: float) -> dict:
        return start_mlp(self.sizes, key, scale)

    def __call__(self, meta, inputs: ValueLossInputs, progress: Progress):
        value, target = inputs.value, inputs.target
        error = value - target
        inputs = [error]
        if self.progress:
            inputs.append(jnp.broadcast_to(jnp.asarray(progress.fraction, error.dtype), error.shape))
        residual = apply_mlp(meta, jnp.stack(inputs, axis=-1))[..., 0]
        return l2_value_loss(value, target) + residual
