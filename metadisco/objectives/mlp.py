"""Small dense networks whose weights are meta-parameters (plain nested dicts, so objective files hold them).

Zero weights give a network that outputs exactly 0 with exactly-0 gradients: learned pieces are residuals
around their baseline, so zero meta-parameters reproduce the baseline bit for bit. The layers are applied by
`metadisco.trainers.networks.mlp`, the package's one dense stack.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from metadisco.core.errors import UserError
from metadisco.rl.nn import mlp


def zero_mlp(sizes: tuple[int, ...]) -> dict:
    """Zero weights of a Dense stack with layer sizes (inputs, hidden..., outputs):
    {"dense_i": {"kernel": [n_in, n_out], "bias": [n_out]}}."""
    return {f"dense_{i}": {"kernel": jnp.zeros((n_in, n_out), jnp.float32), "bias": jnp.zeros((n_out,), jnp.float32)}
            for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True))}


def apply_mlp(meta: dict, x: jax.Array) -> jax.Array:
    """[..., inputs] -> [..., outputs]: tanh between layers, linear output."""
    layers = [lambda x, layer=meta[f"dense_{i}"]: x @ layer["kernel"] + layer["bias"] for i in range(len(meta))]
    return mlp(layers, x, jnp.tanh)


def residual_mlp(meta: dict, features: list[jax.Array], fraction=None) -> jax.Array:
    """`apply_mlp` of `features` (each of one batch shape) stacked, and `fraction` (n / N) broadcast to them when
    given: [...], exactly 0 at zero weights."""
    if fraction is not None:
        features = [*features, jnp.broadcast_to(jnp.asarray(fraction, features[0].dtype), features[0].shape)]
    return apply_mlp(meta, jnp.stack(features, axis=-1))[..., 0]


def random_kernel(key: jax.Array, like: jax.Array, scale: float) -> jax.Array:
    """N(0, scale^2 / fan_in) of the shape and dtype of `like` (a hidden layer of the ES's start point)."""
    fan_in = like.shape[0] if like.ndim >= 2 else 1
    return (scale / jnp.sqrt(fan_in)) * jax.random.normal(key, like.shape, like.dtype)


def start_mlp(sizes: tuple[int, ...], key: jax.Array, scale: float) -> dict:
    """`zero_mlp(sizes)` with every kernel but the last drawn at random (`random_kernel`, key folded with the
    layer's position in sorted key order): still exactly zero output, but not a saddle (`metadisco.meta.start`)."""
    zero = zero_mlp(sizes)
    last = len(zero) - 1
    return {k: layer if k == f"dense_{last}" else {**layer, "kernel": random_kernel(jax.random.fold_in(key, i),
                                                                                     layer["kernel"], scale)}
            for i, (k, layer) in enumerate(sorted(zero.items()))}


def check_hidden_sizes(hidden, what: str) -> tuple[int, ...]:
    """`hidden` as a tuple of positive ints (a list from a file, or one int, is accepted), else a UserError."""
    hidden = tuple(hidden) if isinstance(hidden, (list, tuple)) else (hidden,)
    if not hidden or any(not isinstance(h, int) or isinstance(h, bool) or h <= 0 for h in hidden):
        raise UserError(f"{what}: hidden must be one or more positive integers, got {hidden!r}")
    return hidden


class ResidualMLP:
    """Mixin of a learned piece (a frozen dataclass with fields `hidden` and `progress`) whose meta-parameters
    are one MLP of `num_features` features of its inputs, plus the training fraction n / N when `progress`:
    zero meta-parameters give a residual of exactly 0. `label` names the piece in errors."""

    num_features = 1
    label = "?"

    def __post_init__(self):
        object.__setattr__(self, "hidden", check_hidden_sizes(self.hidden, self.label))

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.num_features + (1 if self.progress else 0), *self.hidden, 1)

    def zero_meta(self) -> dict:
        return zero_mlp(self.sizes)

    def start_meta(self, key, scale: float) -> dict:
        return start_mlp(self.sizes, key, scale)

    def residual(self, meta: dict, features: list[jax.Array], fraction: jax.Array) -> jax.Array:
        """The MLP of `features` (each of one batch shape) and, with `progress`, `fraction` (`residual_mlp`)."""
        return residual_mlp(meta, features, fraction if self.progress else None)
