"""Learned drifts: LPO (Lu et al., NeurIPS 2022) and TA-LPO (Jackson, Lu et al., ICLR 2024).

The drift is a bias-free tanh network of features of (r, A), added to PPO's drift ("PPO init"):

    x(r, A)  = [r - 1, (r - 1)^2, log r, (log r)^2]  and the same four times A          (8 features)
    LPO:       net(x) = tanh(x @ w1) @ w2            w1: [8, hidden], w2: [hidden, 1]
    TA-LPO:    net([x, p x, log(N) x])               p = n / N (training progress), N = number of updates
    drift    = ReLU(net + ppo - 1e-4) + min(ppo, 1e-4)     ppo = drift_ppo(r, A) >= 0

Why it is a valid drift for *any* meta-parameters: every feature is exactly 0 at r = 1 and the network has no
biases with tanh(0) = 0, so net(r = 1) = 0. Near r = 1, |net| < 1e-4 (continuity) and ppo = 0 (inside the clip
range), so the drift is identically 0 on a neighbourhood of r = 1: value 0 and slope 0 there. Both terms are
>= 0. Multiplying the TA-LPO features by p and log N keeps them 0 at r = 1 for every progress value.

The paper's formula is the first term alone. The second term, min(ppo, 1e-4), gives back the 1e-4 that the
offset removes from PPO's drift, so zero meta-parameters give PPO *exactly* (same values and, bit for bit,
the same gradients), which the identity tests check through a whole training run. It changes the drift by at
most 1e-4 and is 0 wherever PPO's drift is 0 (the whole clip range).

Optionally, `floor` = f > 0 keeps a share of PPO's trust region whatever the network learns:

    drift_f  = max(drift, f ppo)

still a valid drift (both terms are >= 0 and identically 0 near r = 1). Beyond the clip PPO's drift grows as
|A| times the distance from it, so moving the ratio there costs at least f of what it costs PPO. Why: the
TA-LPO drift meta-trained with tuned fitness (results/talpo_minatar_tuned) learned to drop that penalty on the side
of lowering bad actions (2-5% of PPO's slope), and over long runs its policy collapsed to a deterministic one.
f = 0 (the default) is the paper's drift, bit for bit.

Meta-parameters: {"w1": float32[num_features, hidden], "w2": float32[hidden, 1]}; zeros are the ES's start.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.core.errors import UserError
from metadisco.objectives.drift import ppo_drift
from metadisco.objectives.mlp import random_kernel
from metadisco.objectives.registry import DRIFTS, DriftInputs, Piece, Progress
from metadisco.rl.nn import mlp

OFFSET = 1e-4  # makes the drift identically 0 near r = 1 (Lu et al. 2022)


def lpo_features(ratio: jax.Array, advantage: jax.Array) -> jax.Array:
    """The eight LPO features of (r, A): [..., 8], every one exactly 0 at r = 1."""
    d = ratio - 1.0
    log_r = jnp.log(ratio)
    base = jnp.stack([d, d * d, log_r, log_r * log_r], axis=-1)
    return jnp.concatenate([base, base * advantage[..., None]], axis=-1)


def talpo_features(ratio: jax.Array, advantage: jax.Array, fraction, num_updates=None) -> jax.Array:
    """TA-LPO's features [..., 16], or [..., 24] with `num_updates`: x, p x and log(N) x, x = `lpo_features`,
    p = n / N (`fraction`), N = `num_updates`; every one exactly 0 at r = 1."""
    x = lpo_features(ratio, advantage)
    parts = [x, jnp.asarray(fraction, x.dtype) * x]
    if num_updates is not None:
        parts.append(jnp.log(jnp.asarray(num_updates, x.dtype)) * x)
    return jnp.concatenate(parts, axis=-1)


def lpo_net(w1: jax.Array, w2: jax.Array, features: jax.Array) -> jax.Array:
    """Bias-free Dense -> tanh -> Dense (the package's one dense stack, `rl.nn.mlp`): [..., F] -> [...]."""
    layers = [lambda x: x @ w1, lambda x: x @ w2]
    return mlp(layers, features, jnp.tanh)[..., 0]


def learned_drift(net_out: jax.Array, ratio: jax.Array, advantage: jax.Array, eps: float,
                  floor: float = 0.0) -> jax.Array:
    """ReLU(net + ppo - 1e-4) + min(ppo, 1e-4), and with floor f > 0 at least f ppo: the LPO residual around PPO
    (see the module docstring)."""
    ppo = ppo_drift(ratio, advantage, eps)  # already >= 0, so ReLU(drift_ppo) of the paper is ppo itself
    drift = jax.nn.relu(net_out + ppo - OFFSET) + jnp.minimum(ppo, OFFSET)
    return jnp.maximum(drift, floor * ppo) if floor > 0 else drift  # static: f = 0 adds no operation


def _zero_net(num_features: int, hidden: int) -> dict:
    return {"w1": jnp.zeros((num_features, hidden), jnp.float32), "w2": jnp.zeros((hidden, 1), jnp.float32)}


class _LPONet(Piece):
    """Meta-parameters of LPO's network: zeros (PPO), or w1 at random and w2 at zero (PPO, off the saddle)."""

    def zero_meta(self) -> dict:
        return _zero_net(self.num_features, self.hidden)

    def start_meta(self, key: jax.Array, scale: float) -> dict:
        zero = self.zero_meta()
        return {"w1": random_kernel(key, zero["w1"], scale), "w2": zero["w2"]}


def _check_options(hidden: int, floor: float, kind: str) -> None:
    if not isinstance(hidden, int) or isinstance(hidden, bool) or hidden <= 0:
        raise UserError(f"drift {kind!r}: hidden must be a positive integer, got {hidden!r}")
    if floor < 0.0:  # NaN never gets here: options are checked finite first
        raise UserError(f"drift {kind!r}: floor must be >= 0 (the share of PPO's drift kept; 0: none), got {floor!r}")


@DRIFTS.register("lpo")
@dataclass(frozen=True)
class LPODrift(_LPONet):
    """LPO: a learned drift of (r, A) (about 1,150 meta-parameters at hidden = 128)."""

    hidden: int = 128
    eps: float = 0.2  # the PPO drift it is a residual around
    floor: float = 0.0  # the share of PPO's drift always kept (module docstring)
    positive_options = ("eps",)

    def __post_init__(self):
        _check_options(self.hidden, self.floor, "lpo")

    num_features = 8

    def __call__(self, meta, inputs: DriftInputs, progress: Progress) -> jax.Array:
        del progress
        ratio, advantage = inputs
        net = lpo_net(meta["w1"], meta["w2"], lpo_features(ratio, advantage))
        return learned_drift(net, ratio, advantage, self.eps, self.floor)


@DRIFTS.register("talpo")
@dataclass(frozen=True)
class TALPODrift(_LPONet):
    """TA-LPO: LPO that also sees training progress n / N and the horizon log N (multiplying the features)."""

    hidden: int = 128
    eps: float = 0.2
    horizon: bool = True  # include the log(N) x features
    floor: float = 0.0  # the share of PPO's drift always kept (module docstring)
    positive_options = ("eps",)

    def __post_init__(self):
        _check_options(self.hidden, self.floor, "talpo")

    @property
    def num_features(self) -> int:
        return 24 if self.horizon else 16

    @property
    def sees_horizon(self) -> bool:
        return self.horizon

    def features(self, ratio, advantage, progress: Progress) -> jax.Array:
        """[..., 16 or 24]: x, (n / N) x and, with `horizon`, log(N) x (`talpo_features`)."""
        return talpo_features(ratio, advantage, progress.fraction, progress.num_updates if self.horizon else None)

    def __call__(self, meta, inputs: DriftInputs, progress: Progress) -> jax.Array:
        ratio, advantage = inputs
        net = lpo_net(meta["w1"], meta["w2"], self.features(ratio, advantage, progress))
        return learned_drift(net, ratio, advantage, self.eps, self.floor)
