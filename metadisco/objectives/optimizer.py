"""Optimisers: each piece builds an optax `GradientTransformation` from its meta-parameters.

`optimizer(meta, OptimizerInputs(learning_rate, max_grad_norm, total_steps), progress)`: `learning_rate` is a
float or an optax schedule; `total_steps` (gradient steps in the whole run) lets learned optimisers see
training progress.
"""

from __future__ import annotations

from dataclasses import dataclass

import optax

from metadisco.objectives.registry import OPTIMIZERS, OptimizerInputs, Piece, Progress


@OPTIMIZERS.register("adam")
@dataclass(frozen=True)
class Adam(Piece):
    eps: float = 1e-5  # PureJaxRL's setting
    positive_options = ("eps",)

    def __call__(self, meta, inputs: OptimizerInputs, progress: Progress) -> optax.GradientTransformation:
        del meta, progress
        return optax.chain(optax.clip_by_global_norm(inputs.max_grad_norm),
                           optax.adam(inputs.learning_rate, eps=self.eps))


@OPTIMIZERS.register("radam")
@dataclass(frozen=True)
class RAdam(Piece):
    """Rectified Adam (Liu et al., ICLR 2020), PQN's optimiser in mttga/purejaxql (optax.radam, its defaults)."""

    eps: float = 1e-8  # optax.radam's default, which PQN keeps
    positive_options = ("eps",)

    def __call__(self, meta, inputs: OptimizerInputs, progress: Progress) -> optax.GradientTransformation:
        del meta, progress
        return optax.chain(optax.clip_by_global_norm(inputs.max_grad_norm),
                           optax.radam(inputs.learning_rate, eps=self.eps))
