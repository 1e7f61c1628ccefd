"""A learned value loss (PureJaxRL blog, Lu 2023): an MLP of the error v - target, as a residual around L2.

Two forms, both L2 exactly (values and gradients, bit for bit) at all-zero meta-parameters, where the ES starts:

    form: add     loss(v, target) = 0.5 (v - target)^2 + net(x)            (the default)
    form: scale   loss(v, target) = 0.5 (v - target)^2 * exp(net(x))

net = Dense(64) -> tanh -> Dense(64) -> tanh -> Dense(1), with biases; x is the error, as the blog feeds it
(`input: raw`), or its symlog, sign(e) log(1 + |e|) (`input: symlog`); with `progress`, net also sees the
training fraction n / N.

Why two forms. `add` is the blog's network beside L2, but its tanh units saturate for errors of a few units,
so where a critic's errors are large (CartPole's returns reach 100s) net is a constant and L2 alone sets the
gradient: a probe of the CartPole recipe found no ES signal at any sigma (`results/value_loss_cartpole/`).
`scale` lets the network reshape the whole loss: a factor exp(net) in [e^-k, e^k] per error, so it can weaken
or strengthen large errors' pull (a Huber-like or steeper loss), treat over- and under-estimates differently
(asymmetric), and be non-convex, the blog's findings; symlog lets the network tell an error of 1 from one of
100 without saturating.

Meta-parameters: {"dense_0": {"kernel": [inputs, h0], "bias": [h0]}, ..., "dense_k": {"kernel": [h, 1], ...}}.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from metadisco.core.errors import unknown_name_error
from metadisco.objectives.mlp import ResidualMLP, residual_mlp
from metadisco.objectives.registry import VALUE_LOSSES, Piece, Progress, ValueLossInputs
from metadisco.objectives.value_loss import l2_value_loss

FORMS = ("add", "scale")
INPUTS = ("raw", "symlog")


def symlog(x):
    """sign(x) log(1 + |x|): the identity's slope at 0, logarithmic far from it (Hafner et al. 2023)."""
    return jnp.sign(x) * jnp.log1p(jnp.abs(x))


def learned_value_loss(meta: dict, value, target, fraction=None, form: str = "add", error_input: str = "raw"):
    """Per sample: 0.5 e^2 + net(x) (`form` add) or 0.5 e^2 exp(net(x)) (scale), e = value - target, x = e or
    symlog(e) (`error_input`), and p = n / N (`fraction`) beside x when given; net = `residual_mlp` of `meta`."""
    error = value - target
    x = symlog(error) if error_input == "symlog" else error
    net = residual_mlp(meta, [x], fraction)
    l2 = l2_value_loss(value, target)
    return l2 * jnp.exp(net) if form == "scale" else l2 + net


@VALUE_LOSSES.register("learned")
@dataclass(frozen=True)
class LearnedValueLoss(ResidualMLP, Piece):
    """L2 plus (`form: add`) or times the exponential of (`form: scale`) a learned network of the error."""

    hidden: tuple[int, ...] = (64, 64)
    progress: bool = False
    form: str = "add"
    input: str = "raw"
    label = "value loss 'learned'"

    def __post_init__(self):
        super().__post_init__()
        if self.form not in FORMS:
            raise unknown_name_error("learned value loss form", self.form, FORMS)
        if self.input not in INPUTS:
            raise unknown_name_error("learned value loss input", self.input, INPUTS)

    def __call__(self, meta, inputs: ValueLossInputs, progress: Progress):
        fraction = progress.fraction if self.progress else None
        return learned_value_loss(meta, inputs.value, inputs.target, fraction, self.form, self.input)
