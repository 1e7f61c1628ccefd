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

from metadisco.objectives.mlp import ResidualMLP
from metadisco.objectives.registry import VALUE_LOSSES, Piece, Progress, ValueLossInputs
from metadisco.objectives.value_loss import l2_value_loss


@VALUE_LOSSES.register("learned")
@dataclass(frozen=True)
class LearnedValueLoss(ResidualMLP, Piece):
    """L2 plus a learned network of (v - target) and, optionally, training progress."""

    hidden: tuple[int, ...] = (64, 64)
    progress: bool = False
    label = "value loss 'learned'"

    def __call__(self, meta, inputs: ValueLossInputs, progress: Progress):
        value, target = inputs.value, inputs.target
        return l2_value_loss(value, target) + self.residual(meta, [value - target], progress.fraction)
