"""Each objective piece written as plain JAX source, one small renderer per piece kind.

A renderer takes (piece, its meta-parameters) and returns a `Source`: module-level Python that defines the slot's
public function with the piece's options and meta-parameters embedded as constants:

    drift        def drift(ratio, advantage[, progress[, num_updates]])      per-sample drift, shape of ratio
    value loss   def value_loss(value, old_value, target[, progress])         per-sample loss
    optimiser    def scale_by_optimizer()                                      an optax GradientTransformation
                 that scales gradients as the piece does before its learning rate (DiscoBench's optim slot);
                 the clipping and the learning rate are the caller's (`formats` adds `make_optimizer`)

`progress` is n / N (update n of N), `num_updates` is N. The maths is the piece's own: the slot's function calls the
functions the piece's `__call__` calls, exported as their source (`Source.functions`), so the exported function
gives the same float32 numbers (`tests/objectives/test_export.py` checks every renderer against its piece on random
batches) and a change to a piece changes its export with it. Renderers are
looked up by the piece's class: a piece without one (a plugin's) is refused by `render`, naming those that
have one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

from metadisco.core.errors import UserError
from metadisco.objectives import open_optimizer as open_module
from metadisco.objectives.drift import DPODrift, PPODrift, dpo_drift, ppo_drift, relu, soft_hinge
from metadisco.objectives.export.literals import array_source
from metadisco.objectives.expression import A, ExpressionDrift, R, to_source
from metadisco.objectives.learned_dpo import LOG_SCALE_LIMIT, LearnedDPODrift, learned_scale
from metadisco.objectives.learned_value_loss import LearnedValueLoss, learned_value_loss, symlog
from metadisco.objectives.lpo import OFFSET, LPODrift, TALPODrift, learned_drift, lpo_features, lpo_net, talpo_features
from metadisco.objectives.mlp import apply_mlp, residual_mlp
from metadisco.objectives.open_optimizer import OpenOptimizer
from metadisco.objectives.optimizer import Adam, RAdam
from metadisco.objectives.registry import OptimizerContext, Piece
from metadisco.objectives.value_loss import (
    AsymmetricL2ValueLoss,
    ClippedL2ValueLoss,
    L2ValueLoss,
    asymmetric_l2_value_loss,
    clipped_l2_value_loss,
    l2_value_loss,
)
from metadisco.rl.nn import mlp

SLOT_FUNCTIONS = {"drift": "drift", "value_loss": "value_loss", "optimizer": "scale_by_optimizer"}


@dataclass(frozen=True)
class Source:
    """One piece as Python source: `code` defines the slot's function (`SLOT_FUNCTIONS`)."""

    code: str
    formula: str  # the piece's maths in one line, for docstrings and the README
    reads_progress: bool = False  # the function takes `progress` (n / N)
    reads_horizon: bool = False  # and `num_updates` (N)
    imports: frozenset[str] = field(default_factory=frozenset)  # beyond jax / jnp: IMPORT_LINES' keys
    # an optimiser whose `scale_by_optimizer(max_grad_norm, learning_rate)` is the whole step (its own clipping
    # and step size), taking `context=OptimizerContext(...)` at each update (OPEN), not a scaling between the
    # caller's clipping and learning rate
    whole_step: bool = False
    # metadisco's own functions that `code` calls, exported as their source (`inspect.getsource`) so that the
    # export runs the very code the piece runs; a module of several pieces defines each once, in this order
    functions: tuple[Callable, ...] = ()


IMPORT_LINES = {"base64": "import base64", "typing": "from typing import Any, NamedTuple",
                "numpy": "import numpy as np", "optax": "import optax",
                "ravel_pytree": "from jax.flatten_util import ravel_pytree"}


def _arrays(*named: tuple[str, object, str]) -> tuple[str, frozenset[str]]:
    """Constant definitions of (NAME, array, comment) triples and the imports they need."""
    lines, imports = [], set()
    for name, value, comment in named:
        line, needs = array_source(name, value, comment)
        lines.append(line)
        if needs:
            imports |= {"numpy", "base64"}
    return "\n".join(lines), frozenset(imports)


# ---------------------------------------------------------------------------------------------------------
# drifts: each calls the piece's own functions (`Source.functions`), with its options and meta-parameters


def _ppo(piece: PPODrift, meta) -> Source:
    formula = "ReLU((r - clip(r, 1 - eps, 1 + eps)) A)"
    return Source(f'''EPS = {piece.eps!r}  # PPO's clip range


def drift(ratio, advantage):
    """PPO's clip objective as a drift (Schulman et al. 2017; Kuba et al. 2022): {formula}."""
    return ppo_drift(ratio, advantage, EPS)''', f"PPO, {formula}, eps = {piece.eps}", functions=(relu, ppo_drift))


_DPO_FORMULA = "ReLU(x - alpha tanh(x / alpha)) with x = (r - 1) A for A >= 0, ReLU(y - beta tanh(y / beta)) " \
               "with y = log(r) A for A < 0"
_DPO_FUNCTIONS = (relu, soft_hinge, dpo_drift)


def _dpo(piece: DPODrift, meta) -> Source:
    return Source(f'''ALPHA = {piece.alpha!r}  # scale of the soft hinge for A >= 0
BETA = {piece.beta!r}  # and for A < 0


def drift(ratio, advantage):
    """DPO's drift (Lu et al., NeurIPS 2022): {_DPO_FORMULA}."""
    return dpo_drift(ratio, advantage, ALPHA, BETA)''',
                  f"DPO, {_DPO_FORMULA}, alpha = {piece.alpha}, beta = {piece.beta}", functions=_DPO_FUNCTIONS)


def _learned_dpo(piece: LearnedDPODrift, meta) -> Source:
    arrays, imports = _arrays(("LOG_ALPHA", meta["log_alpha"], "learned: [a0, a1] with progress, else [a0]"),
                              ("LOG_BETA", meta["log_beta"], "learned: [b0, b1] with progress, else [b0]"))
    args = "ratio, advantage, progress" if piece.progress else "ratio, advantage"
    progress_arg = ", progress" if piece.progress else ""
    formula = ("alpha(p) = alpha exp(a0 + a1 (p - 1/2)), beta(p) = beta exp(b0 + b1 (p - 1/2)), p = n / N"
               if piece.progress else "alpha' = alpha exp(a0), beta' = beta exp(b0)")
    return Source(f'''ALPHA = {piece.alpha!r}  # DPO's scales, at zero meta-parameters
BETA = {piece.beta!r}
LOG_SCALE_LIMIT = {LOG_SCALE_LIMIT!r}  # the log-factors are clipped to +-this
{arrays}


def drift({args}):
    """DPO's drift with learned scales: {formula}."""
    alpha = learned_scale(ALPHA, LOG_ALPHA{progress_arg})
    beta = learned_scale(BETA, LOG_BETA{progress_arg})
    return dpo_drift(ratio, advantage, alpha, beta)''', f"learned DPO, {formula}", reads_progress=piece.progress,
                  imports=imports, functions=(*_DPO_FUNCTIONS, learned_scale))


_LPO_FORMULA = "ReLU(net(x) + ppo - 1e-4) + min(ppo, 1e-4), net(x) = tanh(x W1) W2, ppo = PPO's drift"


def _lpo_source(piece, meta, args: str, features_call: str, what: str, features: tuple, **flags) -> Source:
    w1 = meta["w1"]
    arrays, imports = _arrays(("W1", w1, f"learned: [{w1.shape[0]} features, {w1.shape[1]} hidden]"),
                              ("W2", meta["w2"], f"learned: [{w1.shape[1]} hidden, 1]"))
    formula = _LPO_FORMULA + (f", at least {piece.floor} ppo" if piece.floor > 0 else "")
    return Source(f'''EPS = {piece.eps!r}  # the clip range of the PPO drift LPO is a residual around
OFFSET = {OFFSET!r}  # makes the drift identically 0 near r = 1
FLOOR = {piece.floor!r}  # the share of PPO's drift always kept (0: none)
{arrays}


def drift({args}):
    """{what}: {formula}."""
    return learned_drift(lpo_net(W1, W2, {features_call}), ratio, advantage, EPS, FLOOR)''',
                  f"{what}, {formula}, hidden {w1.shape[1]}, eps = {piece.eps}", imports=imports,
                  functions=(relu, ppo_drift, lpo_features, *features, mlp, lpo_net, learned_drift), **flags)


def _lpo(piece: LPODrift, meta) -> Source:
    return _lpo_source(piece, meta, "ratio, advantage", "lpo_features(ratio, advantage)",
                       "LPO (Lu et al., NeurIPS 2022)", ())


def _talpo(piece: TALPODrift, meta) -> Source:
    args = "ratio, advantage, progress, num_updates" if piece.horizon else "ratio, advantage, progress"
    return _lpo_source(piece, meta, args, f"talpo_features({args})", "TA-LPO (Jackson, Lu et al., ICLR 2024)",
                       (talpo_features,), reads_progress=True, reads_horizon=piece.horizon)


def _expression(piece: ExpressionDrift, meta) -> Source:
    constants = ", ".join(f"{n} = {v!r}" for n, v in piece.constants)
    text = piece.expression + (f"  ({constants})" if constants else "")
    body = to_source(piece.sympy, {R: "ratio", A: "advantage"})
    return Source(f'''def drift(ratio, advantage):
    """A closed-form drift, r = ratio, A = advantage:

        {text}
    """
    out = {body}
    shape = jnp.broadcast_shapes(jnp.shape(ratio), jnp.shape(advantage))
    return jnp.broadcast_to(jnp.asarray(out, jnp.result_type(ratio)), shape)''', f"expression {text}")


# ---------------------------------------------------------------------------------------------------------
# value losses

def _l2(piece: L2ValueLoss, meta) -> Source:
    return Source('''def value_loss(value, old_value, target):
    """L2: 0.5 (v - target)^2, per sample."""
    del old_value
    return l2_value_loss(value, target)''', "L2, 0.5 (v - target)^2", functions=(l2_value_loss,))


def _asymmetric_l2(piece: AsymmetricL2ValueLoss, meta) -> Source:
    formula = "0.5 w (v - target)^2, w = over where v > target, else under"
    return Source(f'''OVER = {piece.over!r}  # weight of the squared error where the value overestimates
UNDER = {piece.under!r}  # and where it does not


def value_loss(value, old_value, target):
    """Asymmetric L2 (an expectile loss): {formula}, per sample."""
    del old_value
    return asymmetric_l2_value_loss(value, target, OVER, UNDER)''',
                  f"asymmetric L2, {formula}, over = {piece.over}, under = {piece.under}",
                  functions=(asymmetric_l2_value_loss,))


def _clipped_l2(piece: ClippedL2ValueLoss, meta) -> Source:
    formula = "0.5 max((v - target)^2, (v_old + clip(v - v_old, -eps, eps) - target)^2)"
    return Source(f'''VALUE_CLIP_EPS = {piece.clip_eps!r}  # how far the value may move before the clipped error counts


def value_loss(value, old_value, target):
    """PPO's clipped value loss: {formula}, per sample."""
    return clipped_l2_value_loss(value, old_value, target, VALUE_CLIP_EPS)''',
                  f"clipped L2, {formula}, eps = {piece.clip_eps}", functions=(clipped_l2_value_loss,))


def _learned_value_loss(piece: LearnedValueLoss, meta) -> Source:
    layers = [meta[f"dense_{i}"] for i in range(len(meta))]
    named = []
    for i, layer in enumerate(layers):
        k = layer["kernel"]
        named += [(f"VALUE_KERNEL_{i}", k, f"learned: [{k.shape[0]}, {k.shape[1]}]"),
                  (f"VALUE_BIAS_{i}", layer["bias"], f"learned: [{k.shape[1]}]")]
    arrays, imports = _arrays(*named)
    entries = ", ".join(f'"dense_{i}": {{"kernel": VALUE_KERNEL_{i}, "bias": VALUE_BIAS_{i}}}'
                        for i in range(len(layers)))
    inputs = "sign(e) log(1 + |e|)" if piece.input == "symlog" else "e"
    net_in = f"[{inputs}, p]" if piece.progress else f"[{inputs}]"
    formula = (f"0.5 e^2 {'* exp(net(' if piece.form == 'scale' else '+ net('}{net_in}))"
               f", e = v - target{', p = n / N' if piece.progress else ''}, net = Dense "
               f"{' -> tanh -> Dense '.join(str(k['kernel'].shape[1]) for k in layers)}")
    args = "value, old_value, target, progress" if piece.progress else "value, old_value, target"
    return Source(f'''{arrays}
VALUE_NET = {{{entries}}}  # Dense layers, tanh between them, linear output
VALUE_FORM = {piece.form!r}  # add: L2 + net; scale: L2 exp(net)
VALUE_INPUT = {piece.input!r}  # what net sees of the error: raw, or symlog


def value_loss({args}):
    """A learned value loss (PureJaxRL blog, Lu 2023), a residual around L2: {formula}, per sample."""
    del old_value
    return learned_value_loss(VALUE_NET, value, target, {"progress" if piece.progress else "None"}, VALUE_FORM,
                              VALUE_INPUT)''', f"learned value loss, {formula}", reads_progress=piece.progress,
                  imports=imports, functions=(mlp, apply_mlp, residual_mlp, symlog, l2_value_loss, learned_value_loss))


# ---------------------------------------------------------------------------------------------------------
# optimisers: the scaling before the learning rate (the caller clips the gradient first and applies the rate)

def _adam(piece: Adam, meta) -> Source:
    return Source(f'''ADAM_EPS = {piece.eps!r}


def scale_by_optimizer():
    """Adam's scaling (Kingma and Ba 2015), eps = ADAM_EPS; the learning rate is applied after it."""
    import optax  # only the optimiser needs optax

    return optax.scale_by_adam(eps=ADAM_EPS)''', f"Adam, eps = {piece.eps}")


def _radam(piece: RAdam, meta) -> Source:
    return Source(f'''RADAM_EPS = {piece.eps!r}


def scale_by_optimizer():
    """Rectified Adam's scaling (Liu et al., ICLR 2020), eps = RADAM_EPS; the learning rate is applied after it."""
    import optax  # only the optimiser needs optax

    return optax.scale_by_radam(eps=RADAM_EPS)''', f"RAdam, eps = {piece.eps}")


# OPEN's functions are exported as their own source (`inspect.getsource`), so the export runs the very code the
# piece runs, in the order it is defined here.
_OPEN_FUNCTIONS = ("meta_shapes", "_is_shape", "_column", "_dense", "gru_cell", "_layer_norm", "head", "update_momenta",
                   "deterministic_step", "dormancy", "tensor_features", "clip_towers", "OpenState", "open_update",
                   "open_transformation")
_OPEN_CONSTANTS = ("DECAYS", "NUM_INPUTS", "STEP_MULT", "EXP_MULT", "LOG_EPS", "NORM_EPS", "LAYER_NORM_EPS",
                   "DORMANCY_EPS")


_OPEN_RESIDUAL = "Adam's clipped update at learning_rate minus u (zero meta-parameters: Adam)"


def _open(piece: OpenOptimizer, meta) -> Source:
    vector, needs = array_source("OPEN_VECTOR", open_module.meta_to_vector(meta),
                                 f"learned: {open_module.meta_size(piece.gru, piece.hidden):,} numbers in OPEN's order")
    constants = "\n".join(f"{name} = {getattr(open_module, name)!r}" for name in _OPEN_CONSTANTS)
    functions = "\n\n".join(inspect.getsource(getattr(open_module, name)) for name in _OPEN_FUNCTIONS)
    residual = f"; with RESIDUAL, {_OPEN_RESIDUAL}" if piece.residual else ""
    residual_doc = f"\n    With RESIDUAL the step is {_OPEN_RESIDUAL}." if piece.residual else ""
    formula = (f"OPEN (Goldie et al., NeurIPS 2024), GRU {piece.gru}, hidden {piece.hidden}: u = o0 1e-3 "
               f"exp(1e-3 o1) + o2 1e-3 N(0, 1) on the actor, zero-mean, p <- p - u{residual}")
    return Source(f'''{constants}
OPEN_GRU = {piece.gru!r}
OPEN_HIDDEN = {piece.hidden!r}
RESIDUAL = {piece.residual!r}  # add OPEN's update to Adam's (metadisco's start) instead of replacing it
ADAM_EPS = {piece.eps!r}  # the residual's Adam epsilon
{vector}


{inspect.getsource(OptimizerContext)}

{functions}

def open_meta():
    """OPEN_VECTOR unflattened into OPEN's meta-parameter tree (as OPEN's eval.py reads its released .npy)."""
    zero = jax.tree.map(lambda s: jnp.zeros(s, jnp.float32), meta_shapes(OPEN_GRU, OPEN_HIDDEN), is_leaf=_is_shape)
    return ravel_pytree(zero)[1](OPEN_VECTOR)


def scale_by_optimizer(max_grad_norm=0.5, learning_rate=None):
    """OPEN, Goldie et al. (NeurIPS 2024): the update u = o0 1e-3 exp(1e-3 o1) + o2 1e-3 N(0, 1) (noise on the
    actor only), made zero-mean, and p <- p - u.{residual_doc}

    OPEN's whole step, not a scaling: it clips the actor's and the critic's gradients to global norm
    max_grad_norm (each apart) and makes its own step size, so no learning rate follows it (learning_rate is
    read only with RESIDUAL). Its update is update(grads, state, params, context=OptimizerContext(...)) and
    returns the change to add to the params; the context carries, per step, each layer's mean |activation| per
    unit, which leaves are the actor's, each leaf's layer proportion i / (L - 1) in its own tower, the training
    proportion n / (N - 1), the epoch proportion e / (E - 1) and a key for the actor noise.
    """
    return open_transformation(open_meta(), OPEN_GRU, RESIDUAL, ADAM_EPS, learning_rate, max_grad_norm)''',
                  formula, imports=frozenset({"typing", "numpy", "optax", "ravel_pytree"} | ({"base64"} if needs
                                                                                            else set())),
                  whole_step=True)


RENDERERS: dict[type, Callable[[Piece, object], Source]] = {
    PPODrift: _ppo, DPODrift: _dpo, LearnedDPODrift: _learned_dpo, LPODrift: _lpo, TALPODrift: _talpo,
    ExpressionDrift: _expression,
    L2ValueLoss: _l2, AsymmetricL2ValueLoss: _asymmetric_l2, ClippedL2ValueLoss: _clipped_l2,
    LearnedValueLoss: _learned_value_loss,
    Adam: _adam, RAdam: _radam, OpenOptimizer: _open,
}
SLOT_WORDS = {"drift": "drift", "value_loss": "value loss", "optimizer": "optimizer"}


def render(slot: str, piece: Piece, meta) -> Source:
    """`piece` (in `slot`) as source; a piece kind without a renderer is a one-line `UserError`."""
    renderer = RENDERERS.get(type(piece))
    if renderer is None:
        from metadisco.objectives.objective import PIECE_REGISTRIES

        registry = PIECE_REGISTRIES[slot]
        kinds = sorted(cls.name for cls in RENDERERS if cls.name in registry.names() and registry.get(cls.name) is cls)
        origin = f" (from plugin {piece.plugin})" if piece.plugin else ""
        raise UserError(f"{SLOT_WORDS[slot]} {piece.name!r}{origin} cannot be exported: export writes the "
                        f"{SLOT_WORDS[slot]} kinds {', '.join(kinds)}")
    return renderer(piece, meta)
