"""Published TD losses for DQN, as value-loss pieces (the value-loss slot is a TD trainer's TD loss).

Both were found by regularised evolution over computation graphs of the loss, bootstrapped from DQN and trained
on classic control and MiniGrid (Co-Reyes, Miao, Peng, Real, Levine, Le, Lee, Faust, "Evolving Reinforcement
Learning Algorithms", ICLR 2021, section 4.3). With `Y = r + gamma max_a Q_target(s', a)` (the inputs' `target`)
and `delta = Q(s, a) - Y`:

    DQNReg      L = delta^2 + k Q(s, a)                                         k = 0.1
    DQNClipped  L = max[Q(s, a), delta^2 + Y] + max[Q(s, a) - Y, gamma (max_a Q_target(s', a))^2]

Both lower the Q-values DQN overestimates: DQNReg always, DQNClipped where Q(s, a) > delta^2 + Y. Unlike the L2
piece (0.5 delta^2) they keep the paper's delta^2, so that k weighs the regulariser as the paper's does. The
paper writes DQNClipped's second term with gamma unmasked; here it is `discount` = gamma (1 - terminated), as in
the target, so that a terminal step's term is 0. DQNClipped reads the target's parts (`ValueLossInputs.next_value`,
`.discount`), which only a one-step TD trainer (DQN) gives.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.core.errors import UserError
from metadisco.objectives.registry import VALUE_LOSSES, Piece, Progress, ValueLossInputs


def dqn_reg_loss(q: jax.Array, target: jax.Array, weight: float = 0.1) -> jax.Array:
    """DQNReg per sample: (Q - Y)^2 + weight Q; any batch shape."""
    return jnp.square(q - target) + weight * q


def dqn_clipped_loss(q: jax.Array, target: jax.Array, next_value: jax.Array, discount: jax.Array) -> jax.Array:
    """DQNClipped per sample: max[Q, (Q - Y)^2 + Y] + max[Q - Y, discount next_value^2]; any batch shape."""
    delta = q - target
    return jnp.maximum(q, jnp.square(delta) + target) + jnp.maximum(delta, discount * jnp.square(next_value))


@VALUE_LOSSES.register("dqn_reg")
@dataclass(frozen=True)
class DQNRegLoss(Piece):
    """DQNReg (Co-Reyes et al. 2021): the squared TD error plus `weight` times Q(s, a); weight 0 is delta^2."""

    weight: float = 0.1

    def __call__(self, meta, inputs: ValueLossInputs, progress: Progress) -> jax.Array:
        del meta, progress
        return dqn_reg_loss(inputs.value, inputs.target, self.weight)


@VALUE_LOSSES.register("dqn_clipped")
@dataclass(frozen=True)
class DQNClippedLoss(Piece):
    """DQNClipped (Co-Reyes et al. 2021); needs a one-step TD trainer's target parts (algorithm dqn)."""

    reads_target_parts = True

    def __call__(self, meta, inputs: ValueLossInputs, progress: Progress) -> jax.Array:
        del meta, progress
        if inputs.next_value is None or inputs.discount is None:
            raise UserError("value loss dqn_clipped reads the TD target's parts (next_value, discount), which only "
                             "algorithm dqn's trainer gives; use it with algorithm dqn")
        return dqn_clipped_loss(inputs.value, inputs.target, inputs.next_value, inputs.discount)
