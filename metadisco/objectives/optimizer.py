"""Optimisers: each piece builds an optax `GradientTransformation` from its meta-parameters.

`make(meta, learning_rate, max_grad_norm, total_steps)`: `learning_rate` is a float or an optax schedule;
`total_steps` (gradient steps in the whole run) lets learned optimisers see training progress.
"""

from __future__ import annotations

from dataclasses import dataclass

import optax

from metadisco.objectives.registry import OPTIMIZERS, Piece


@OPTIMIZERS.register("adam")
@dataclass(frozen=True)
class Adam(Piece):
    eps: float = 1e-5  # PureJaxRL's setting
    positive_options = ("eps",)

    def make(self, meta, learning_rate, max_grad_norm: float, total_steps: int) -> optax.GradientTransformation:
        del meta, total_steps
        return optax.chain(optax.clip_by_global_norm(max_grad_norm),
                           optax.adam(learning_rate, eps=self.eps))
