"""OPEN, the learned optimiser of Goldie et al., "Can Learned Optimization Make Reinforcement Learning Less
Difficult?" (NeurIPS 2024), as its released code has it (AlexGoldie/rl-learned-optimization:
`rl_optimizer/network.py` `GRU_Opt`, `train.py`).

Per parameter p of the agent, after its gradient is clipped (global norm `max_grad_norm`, actor and critic
clipped separately) and its momenta updated (m_b <- b m_b + (1 - b) g, b in 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999):

    x[:15] = [p, sign(m_b) (6), log(|m_b| + 1e-13) (6), sign(g), log(|g| + 1e-13)]     (x is [19, P]: features first)
             each feature divided by its root mean square over the tensor (+ 1e-5 inside the root)
    x[15:] = [training proportion n / (N - 1), layer proportion i / (L - 1), batch proportion e / (E - 1),
              dormancy of the unit p feeds]
    h      = GRUCell(gru)(h, x)                       (flax's GRUCell; h starts at 0, one per parameter)
    o      = Dense(hidden) -> LayerNorm -> relu -> Dense(hidden) -> LayerNorm -> relu -> Dense(3)   (h)
    u      = o0 * 1e-3 * exp(1e-3 * o1) + o2 * actor * 1e-3 * N(0, 1)
    u      = u - mean(u)                                  one mean over every parameter, actor and critic
    p     <- p - u

Dormancy: a layer's mean |activation| over the minibatch per unit, divided by its mean over the layer's units
(+ 1e-11 first), broadcast to the unit's incoming weights and bias. OPEN does not use the learning rate: its
step size is its own (1e-3 units).

Meta-parameters are OPEN's own pytree, {"gru_params": {"params": flax GRUCell's {hn, hr, hz, in, ir, iz}},
"params": {"params": flax Sequential's {layers_0, layers_1, layers_3, layers_4, layers_6}}}, so that JAX's
flattening order (sorted keys) is the order of OPEN's saved vectors: a released `*_OPEN.npy` unflattens into it
unchanged (`meta_from_vector`; 1,211 numbers at gru 8 / hidden 16, 3,571 at OPEN's `--larger` 16 / 32).

The start. OPEN's ES starts at all-zero meta-parameters, where every output is 0 and so every update is 0: the
agent does not learn. metadisco's rule is that zero meta-parameters reproduce the baseline (paired fitness and
meta-training's control run the objective at zero), so `residual: true` offers the other start: Adam's update
(clipped as the `adam` optimiser clips, at the trainer's learning rate and schedule) minus OPEN's zero-mean u, which
at zero meta-parameters is Adam's update exactly. The default (`residual: false`) is OPEN as published, the one
its released vectors were trained for; with it, zero meta-parameters are an agent that does not learn, so meta-
training it should use unpaired fitness normalised by Adam-PPO's return, as OPEN does. meta-training's
`start: zero` is OPEN's all-zero start; its default `start: hidden` (`start_meta`) draws the GRU and hidden
kernels at random and keeps the output layer at zero, so the start still gives zero u but is not a saddle.

The seam. optax's `update(grads, state, params)` sees neither activations nor the epoch, so this piece declares
`needs_context = True` and its transformation is an `optax.GradientTransformationExtraArgs` whose update takes
`context=OptimizerContext(...)` (`metadisco.objectives.registry`): the trainer builds that context only for such a
piece, so no other program computes or changes anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from metadisco.core.errors import UserError
from metadisco.objectives.mlp import random_kernel
from metadisco.objectives.registry import OPTIMIZERS, OptimizerContext, OptimizerInputs, Piece, Progress

DECAYS = (0.1, 0.5, 0.9, 0.99, 0.999, 0.9999)  # OPEN's momentum timescales
NUM_INPUTS = 19  # 15 normalised (p, 6 + 6 momenta, 2 gradient) + 4 constant per tensor
STEP_MULT = 1e-3  # OPEN's step_mult
EXP_MULT = 1e-3  # OPEN's exp_mult
LOG_EPS = 1e-13  # inside log|.| of gradients and momenta
NORM_EPS = 1e-5  # OPEN's _second_moment_normalizer
LAYER_NORM_EPS = 1e-6  # flax LayerNorm's default
DORMANCY_EPS = 1e-11


def meta_shapes(gru: int, hidden: int) -> dict:
    """OPEN's meta-parameter tree (flax GRUCell(gru) on 19 inputs, flax Sequential MLP) as shapes."""
    dense_i = lambda: {"bias": (gru,), "kernel": (NUM_INPUTS, gru)}  # noqa: E731
    dense_h = lambda: {"kernel": (gru, gru)}  # noqa: E731
    norm = lambda: {"bias": (hidden,), "scale": (hidden,)}  # noqa: E731
    return {
        "gru_params": {"params": {"hn": {"bias": (gru,), "kernel": (gru, gru)}, "hr": dense_h(), "hz": dense_h(),
                                  "in": dense_i(), "ir": dense_i(), "iz": dense_i()}},
        "params": {"params": {"layers_0": {"bias": (hidden,), "kernel": (gru, hidden)}, "layers_1": norm(),
                              "layers_3": {"bias": (hidden,), "kernel": (hidden, hidden)}, "layers_4": norm(),
                              "layers_6": {"bias": (3,), "kernel": (hidden, 3)}}},
    }


def _is_shape(x) -> bool:
    return isinstance(x, tuple) and all(isinstance(i, int) for i in x)


def meta_size(gru: int, hidden: int) -> int:
    return int(sum(np.prod(s) for s in jax.tree.leaves(meta_shapes(gru, hidden), is_leaf=_is_shape)))


# ----- the network, written out from flax's GRUCell / Dense / LayerNorm (tests check it against flax) -----
# Features first: every array here has its features on axis 0 and the parameters it runs on after them
# ([19, P] inputs, [gru, P] carry). XLA:CPU vectorises over the last axis, so with P there an optimiser step runs
# about 2.5x as fast as with its 8, 16 or 19 features there (Breakout's 59,908 parameters, 2-core CPU;
# results/bench/open_layout.txt).

def _column(v: jax.Array, ndim: int) -> jax.Array:
    """A per-feature vector [n] shaped to broadcast against features-first arrays of `ndim` axes: [n, 1, ...]."""
    return v.reshape((-1,) + (1,) * (ndim - 1))


def _dense(theta: dict, x: jax.Array) -> jax.Array:
    """flax's Dense on features-first x [in, ...] -> [out, ...]."""
    y = jnp.tensordot(theta["kernel"], x, axes=(0, 0))
    return y + _column(theta["bias"], x.ndim) if "bias" in theta else y


def gru_cell(theta: dict, h: jax.Array, x: jax.Array) -> jax.Array:
    """flax.linen.GRUCell, features first: h [gru, ...], x [19, ...] -> new h [gru, ...] (its output is its carry)."""
    t = theta["params"]
    r = jax.nn.sigmoid(_dense(t["ir"], x) + _dense(t["hr"], h))
    z = jax.nn.sigmoid(_dense(t["iz"], x) + _dense(t["hz"], h))
    n = jnp.tanh(_dense(t["in"], x) + r * _dense(t["hn"], h))
    return (1.0 - z) * n + z * h


def _layer_norm(theta: dict, x: jax.Array) -> jax.Array:
    # flax's LayerNorm over axis 0: fast variance E[x^2] - E[x]^2 clipped at 0, then (x - mean) * (rsqrt(var + eps)
    # * scale). The means are a contraction with 1/n weights (XLA:CPU reduces over a leading axis slowly).
    weights = jnp.full((x.shape[0],), 1.0 / x.shape[0], x.dtype)
    mean = jnp.tensordot(weights, x, axes=(0, 0))[None]
    var = jnp.maximum(0.0, jnp.tensordot(weights, jnp.square(x), axes=(0, 0))[None] - jnp.square(mean))
    scale, bias = _column(theta["scale"], x.ndim), _column(theta["bias"], x.ndim)
    return (x - mean) * (jax.lax.rsqrt(var + LAYER_NORM_EPS) * scale) + bias


def head(theta: dict, h: jax.Array) -> jax.Array:
    """OPEN's MLP on the GRU output, features first: h [gru, ...] -> o [3, ...]."""
    t = theta["params"]
    x = jax.nn.relu(_layer_norm(t["layers_1"], _dense(t["layers_0"], h)))
    x = jax.nn.relu(_layer_norm(t["layers_4"], _dense(t["layers_3"], x)))
    return _dense(t["layers_6"], x)


# ----- inputs -----

def update_momenta(momenta: jax.Array, grad: jax.Array) -> jax.Array:
    """OPEN's momenta at its timescales: momenta [len(DECAYS), ...], grad [...] -> [len(DECAYS), ...]."""
    decays = jnp.asarray(DECAYS, grad.dtype).reshape((-1,) + (1,) * grad.ndim)
    return decays * momenta + (1.0 - decays) * grad[None]


def deterministic_step(out: jax.Array) -> jax.Array:
    """OPEN's update before its noise: the network's output [3, ...] -> o0 * 1e-3 * exp(1e-3 * o1), [...]."""
    return out[0] * STEP_MULT * jnp.exp(out[1] * EXP_MULT)


def dormancy(activation: jax.Array) -> jax.Array:
    """OPEN's dormancy of a layer's units: a [units] (mean |activation| per unit) -> a / mean(|a|), after + 1e-11."""
    a = activation + DORMANCY_EPS
    return a / jnp.sum(jnp.abs(a), axis=-1, keepdims=True) * a.shape[-1]


def tensor_features(p: jax.Array, g: jax.Array, m: jax.Array, training: jax.Array, layer: float,
                    batch: jax.Array, dorm: jax.Array) -> jax.Array:
    """One tensor's 19 inputs, features first: [19, *p.shape] (p, g [*shape]; m [6, *shape]; dorm broadcastable
    to p)."""
    log = lambda x: jnp.log(jnp.abs(x) + LOG_EPS)  # noqa: E731
    varying = jnp.concatenate([p[None], jnp.sign(m), log(m), jnp.sign(g)[None], log(g)[None]], 0)
    axes = tuple(range(1, varying.ndim))
    varying = varying * jax.lax.rsqrt(NORM_EPS + jnp.mean(jnp.square(varying), axis=axes, keepdims=True))
    constant = [jnp.broadcast_to(jnp.asarray(v, p.dtype), p.shape) for v in (training, layer, batch)]
    constant.append(jnp.broadcast_to(dorm, p.shape).astype(p.dtype))
    return jnp.concatenate([varying, jnp.stack(constant, axis=0)], axis=0)


def clip_towers(grads: Any, actor_mask: Any, max_norm) -> Any:
    """optax.clip_by_global_norm applied to the actor's leaves and to the critic's leaves separately (OPEN clips
    its two networks' gradients one by one). `actor_mask`: a pytree like `grads` of Python numbers (1 = actor)."""
    leaves, treedef = jax.tree.flatten(grads)
    mask = jax.tree.leaves(actor_mask)
    out = list(leaves)
    for tower in (True, False):
        idx = [i for i, m in enumerate(mask) if bool(m) == tower]
        if not idx:
            continue
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(leaves[i])) for i in idx))
        for i in idx:
            out[i] = jax.lax.select(norm < max_norm, leaves[i], leaves[i] / norm.astype(leaves[i].dtype) * max_norm)
    return jax.tree.unflatten(treedef, out)


class OpenState(NamedTuple):
    momenta: jax.Array  # [6, num_params]: every parameter's momenta, in the params' flattening order
    carry: jax.Array  # [gru, num_params]: every parameter's GRU state
    adam: Any  # `residual`: the clipped Adam's own state; else optax.EmptyState()


def open_update(meta: dict, grads: Any, momenta: jax.Array, carry: jax.Array, params: Any,
                context: OptimizerContext) -> tuple[Any, jax.Array, jax.Array]:
    """OPEN's update u (to subtract from params; zero mean over all parameters) of already-clipped `grads`.

    Returns (u, a pytree like params; new momenta [6, P]; new carry [gru, P]).
    """
    g_leaves, treedef = jax.tree.flatten(grads)
    p_leaves = treedef.flatten_up_to(params)
    act_leaves = treedef.flatten_up_to(context.activations)
    layer_leaves = treedef.flatten_up_to(context.layer_proportion)
    mask_leaves = treedef.flatten_up_to(context.actor_mask)
    sizes = [x.size for x in g_leaves]
    offsets = np.cumsum([0] + sizes)
    g_flat = jnp.concatenate([jnp.ravel(g) for g in g_leaves])
    momenta = update_momenta(momenta, g_flat)

    features = []
    for i, (p, g) in enumerate(zip(p_leaves, g_leaves, strict=True)):
        m = momenta[:, offsets[i]:offsets[i + 1]].reshape((len(DECAYS),) + p.shape)
        p1, g1, m1 = (p, g, m) if p.ndim else (p[None], g[None], m[:, None])  # OPEN reshapes scalars to [1]
        x = tensor_features(p1, g1, m1, context.training_proportion, float(layer_leaves[i]),
                            context.batch_proportion, dormancy(act_leaves[i]))
        features.append(x.reshape(NUM_INPUTS, -1))
    carry = gru_cell(meta["gru_params"], carry, jnp.concatenate(features, axis=1))
    out = head(meta["params"], carry)
    step = deterministic_step(out)
    actor = jnp.concatenate([jnp.full((n,), float(bool(mk)), g_flat.dtype)
                             for n, mk in zip(sizes, mask_leaves, strict=True)])
    noise = jax.random.normal(context.key, step.shape, step.dtype)
    u = step + out[2] * actor * noise * STEP_MULT
    u = u - jnp.mean(u)
    u_leaves = [u[a:b].reshape(p.shape).astype(p.dtype)
                for p, a, b in zip(p_leaves, offsets[:-1], offsets[1:], strict=True)]
    return jax.tree.unflatten(treedef, u_leaves), momenta, carry


def open_transformation(meta: dict, gru: int, residual: bool, eps: float, learning_rate,
                        max_grad_norm) -> optax.GradientTransformationExtraArgs:
    """OPEN's whole step as an optax transformation: its update takes `context=OptimizerContext(...)` and returns
    the change to add to the params (-u; with `residual`, Adam's clipped update at `learning_rate` minus u)."""
    adam = optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(learning_rate, eps=eps)) \
        if residual else None

    def init(params):
        size = sum(x.size for x in jax.tree.leaves(params))
        return OpenState(jnp.zeros((len(DECAYS), size), jnp.float32), jnp.zeros((gru, size), jnp.float32),
                         adam.init(params) if adam is not None else optax.EmptyState())

    def update(grads, state: OpenState, params=None, *, context: OptimizerContext | None = None, **extra):
        del extra
        if params is None or context is None:
            raise ValueError("optimizer 'open' needs params and the trainer's OptimizerContext "
                             "(a trainer builds it for a piece with needs_context)")
        clipped = clip_towers(grads, context.actor_mask, max_grad_norm)
        u, momenta, carry = open_update(meta, clipped, state.momenta, state.carry, params, context)
        if adam is None:
            return jax.tree.map(jnp.negative, u), OpenState(momenta, carry, state.adam)
        adam_updates, adam_state = adam.update(grads, state.adam, params)
        return jax.tree.map(jnp.subtract, adam_updates, u), OpenState(momenta, carry, adam_state)

    return optax.GradientTransformationExtraArgs(init, update)


@OPTIMIZERS.register("open")
@dataclass(frozen=True)
class OpenOptimizer(Piece):
    """OPEN (Goldie et al., NeurIPS 2024): a per-parameter GRU + MLP proposes every update, with learned noise on
    the actor. `gru` / `hidden`: 8 / 16 as published (16 / 32 is OPEN's `--larger`). `residual`: add OPEN's
    update to Adam's, so that zero meta-parameters are Adam (metadisco's start) instead of no update (OPEN's)."""

    gru: int = 8
    hidden: int = 16
    residual: bool = False
    eps: float = 1e-5  # the residual's Adam epsilon, as the `adam` optimiser's
    positive_options = ("eps",)
    needs_context = True

    def __post_init__(self):
        for name in ("gru", "hidden"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 4096:
                raise UserError(f"optimizer 'open': {name} must be an integer in [1, 4096], got {value!r}")

    def zero_meta(self) -> dict:
        return jax.tree.map(lambda s: jnp.zeros(s, jnp.float32), meta_shapes(self.gru, self.hidden),
                            is_leaf=_is_shape)

    def start_meta(self, key, scale: float) -> dict:
        """metadisco's `start: hidden`: every kernel but the output layer's drawn at random and the LayerNorm
        scales at 1 (flax's own initialisation), biases and the output layer at 0. The output is still exactly 0
        (zero updates; Adam's with `residual`), but not a saddle. `start: zero` is OPEN's own all-zero start."""
        zero = self.zero_meta()
        paths = jax.tree_util.tree_flatten_with_path(zero)[0]
        leaves = []
        for i, (path, x) in enumerate(paths):
            names = [str(getattr(k, "key", k)) for k in path]
            if "layers_6" in names or names[-1] == "bias":
                leaves.append(x)
            elif names[-1] == "scale":
                leaves.append(jnp.ones_like(x))
            else:
                leaves.append(random_kernel(jax.random.fold_in(key, i), x, scale))
        return jax.tree.unflatten(jax.tree.structure(zero), leaves)

    def __call__(self, meta, inputs: OptimizerInputs, progress: Progress) -> optax.GradientTransformationExtraArgs:
        del progress  # OPEN's training proportion comes in the context, per step
        learning_rate, max_grad_norm, _ = inputs
        return open_transformation(meta, self.gru, self.residual, self.eps, learning_rate, max_grad_norm)


def meta_from_vector(vector: np.ndarray, gru: int = 8, hidden: int = 16) -> dict:
    """A flat vector in OPEN's order (its saved `.npy`, `jax.flatten_util.ravel_pytree` of its meta tree) ->
    the meta-parameter tree, as OPEN's `eval.py` unflattens it (`ParameterReshaper`)."""
    zero = OpenOptimizer(gru=gru, hidden=hidden).zero_meta()
    flat, unravel = ravel_pytree(zero)
    vector = jnp.asarray(vector, jnp.float32)
    if vector.shape != flat.shape:
        raise UserError(f"an OPEN vector for gru {gru} / hidden {hidden} has {flat.size:,} numbers, "
                        f"got shape {tuple(vector.shape)}")
    return unravel(vector)


def meta_to_vector(meta: dict) -> np.ndarray:
    """The meta-parameter tree -> OPEN's flat float32 vector (the inverse of `meta_from_vector`)."""
    return np.asarray(ravel_pytree(meta)[0], np.float32)


def sizes_for_length(length: int) -> tuple[int, int] | None:
    """(gru, hidden) of OPEN's published sizes whose vector has `length` numbers, or None."""
    for gru, hidden in ((8, 16), (16, 32)):
        if meta_size(gru, hidden) == length:
            return gru, hidden
    return None
