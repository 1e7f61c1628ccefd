"""Inside OPEN's learned optimiser (`optimizer: {kind: open}`), as Goldie et al. look inside theirs ("Can Learned
Optimization Make Reinforcement Learning Less Difficult?", NeurIPS 2024): figures for `metadisco plot`.

    open_update.png    the update OPEN proposes for a parameter against its gradient g and its momentum m, at
                       training proportions 0, 0.5 and 1 (heatmaps, one shared colour scale), and slices at
                       fixed m
    open_noise.png     the learned noise scale |o2| * 1e-3 (the std of the actor's noise) over training
                       proportion, beside the deterministic step's size, over the same (g, m) grid
    dormancy.png       (only with `plot --env`: it trains) the dormant-unit fraction per update of this
                       optimiser and of Adam on the same seeds (`metadisco.analysis.dormancy`); drawn for any
                       PPO objective's optimiser

The surface. OPEN's update of a parameter depends on the whole tensor it is in (its 15 varying inputs are divided
by their root mean square over the tensor) and on its GRU state. So a surface is one OPEN step of one tensor, the
(g, m) grid itself: entry (i, j) has gradient g_j, the same momentum m_i at all six timescales before the step
(which then updates it as the optimiser does, m_b <- b m_b + (1 - b) g), and the other inputs held at the typical
values `TYPICAL`: parameter value 0 (the centre of a tensor's weights), layer proportion 0.5 (the middle layer of
a two-hidden-layer tower), batch proportion 0 (first epoch), dormancy 1 (a unit at its layer's mean), and the GRU
state that its inputs settle it to when held (`SETTLE_STEPS` steps from 0). Shown is OPEN's per-parameter step
o0 * 1e-3 * exp(1e-3 * o1), before the update's zero-mean shift (one constant over every parameter of the agent);
the optimiser subtracts it (p <- p - u), so a positive value moves the parameter down, as gradient descent does
for a positive gradient. With `residual: true` this is the term subtracted from Adam's update, and the figures say
so: a residual objective at its start (zero meta-parameters) draws a flat surface, not a rule that does nothing.
`open_surface` is that computation; tests check it equals the optimiser's own update for the same inputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.figures import pyplot, save_figure
from metadisco.objectives import open_optimizer as O

plt = pyplot()

TRAINING_PROPORTIONS = (0.0, 0.5, 1.0)
TYPICAL = {"param": 0.0, "layer": 0.5, "batch": 0.0, "dormancy": 1.0}
SETTLE_STEPS = 20
DPI = 110


class Surface(NamedTuple):
    step: jax.Array  # [...]: o0 * 1e-3 * exp(1e-3 * o1), the deterministic update (subtracted from the parameter)
    noise_scale: jax.Array  # [...]: o2 * 1e-3 (signed; the actor's noise is noise_scale * N(0, 1))
    carry: jax.Array  # [gru, ...]: the GRU state after this step (features first, as OPEN's network runs)


def surface_features(param: jax.Array, grad: jax.Array, momentum: jax.Array, training, layer, batch,
                     dorm) -> jax.Array:
    """OPEN's 19 inputs for one tensor, [19, *shape], at the step that follows momenta `momentum` ([*shape]: the
    same value at all six timescales, or [6, *shape]) with gradient `grad` (param, grad [*shape]; training,
    layer, batch scalars; dorm broadcastable to shape)."""
    if momentum.shape == grad.shape:
        momentum = jnp.broadcast_to(momentum[None], (len(O.DECAYS),) + grad.shape)
    momentum = O.update_momenta(momentum, grad)
    return O.tensor_features(param, grad, momentum, jnp.float32(training), float(layer), jnp.float32(batch),
                             jnp.asarray(dorm, grad.dtype))


def open_surface(meta: dict, features: jax.Array, carry: jax.Array | None = None) -> Surface:
    """One OPEN step on `features` [19, ...] from GRU state `carry` [gru, ...] (None: 0, a fresh state)."""
    gru = meta["gru_params"]["params"]["hn"]["kernel"].shape[0]
    if carry is None:
        carry = jnp.zeros((gru,) + features.shape[1:], features.dtype)
    carry = O.gru_cell(meta["gru_params"], carry, features)
    out = O.head(meta["params"], carry)
    return Surface(O.deterministic_step(out), out[2] * O.STEP_MULT, carry)


def settled_carry(meta: dict, features: jax.Array, steps: int = SETTLE_STEPS) -> jax.Array:
    """The GRU state after `steps` steps from 0 with the inputs held at `features` [19, ...]."""
    carry = open_surface(meta, features).carry
    for _ in range(steps - 1):
        carry = open_surface(meta, features, carry).carry
    return carry


def grid_values(lo: float = 1e-6, hi: float = 1e-1, per_side: int = 21) -> np.ndarray:
    """A signed log grid: -hi .. -lo, lo .. hi (no 0: OPEN reads log|g|), [2 * per_side] float32."""
    side = np.logspace(np.log10(lo), np.log10(hi), per_side)
    return np.concatenate([-side[::-1], side]).astype(np.float32)


def update_grid(meta: dict, grads: np.ndarray, momenta: np.ndarray, training: float,
                typical: dict = TYPICAL, settle: int = SETTLE_STEPS) -> Surface:
    """OPEN's step over the grid [len(momenta), len(grads)] (rows: momentum, columns: gradient) as one tensor, at
    `training` proportion and the `typical` other inputs, from the GRU state those inputs settle to."""
    g, m = (jnp.asarray(x) for x in np.meshgrid(grads.astype(np.float32), momenta.astype(np.float32)))
    x = surface_features(jnp.full_like(g, typical["param"]), g, m, training, typical["layer"], typical["batch"],
                         typical["dormancy"])
    return open_surface(meta, x, settled_carry(meta, x, settle) if settle else None)


def _typical_text(settle: int = SETTLE_STEPS) -> str:
    t = TYPICAL
    return (f"parameter {t['param']:g}, layer proportion {t['layer']:g}, batch proportion {t['batch']:g}, "
            f"dormancy {t['dormancy']:g}, GRU state settled over {settle} steps; the (g, m) grid is one tensor")


def _shown(residual: bool) -> str:
    """What the figures draw: OPEN's whole update, or (`residual: true`) the residual it subtracts from Adam's."""
    return "OPEN's residual (subtracted from Adam's update)" if residual else "OPEN's update"


def _signed_log_axis(ax, axis: str, values: np.ndarray) -> None:
    """Grid points placed at their index (evenly, as the signed log grid is), labelled by value at every decade."""
    exponents = np.log10(np.abs(values))
    ticks = [i for i, e in enumerate(exponents) if abs(e - np.round(e)) < 1e-3]
    labels = [f"{values[i]:.0e}".replace("e-0", "e-") for i in ticks]
    (ax.set_xticks if axis == "x" else ax.set_yticks)(ticks, labels, fontsize=7,
                                                      **({"rotation": 60} if axis == "x" else {}))


def update_plot(meta: dict, label: str, out: Path, residual: bool = False) -> Path:
    grads = momenta = grid_values()
    values = [np.asarray(update_grid(meta, grads, momenta, t).step) for t in TRAINING_PROPORTIONS]
    top = max(float(np.max(np.abs(v))) for v in values) or 1e-12
    n = len(TRAINING_PROPORTIONS)
    fig, axes = plt.subplots(2, n, figsize=(4.4 * n, 7.4), layout="constrained", squeeze=False)
    mesh = None
    for col, (t, v) in enumerate(zip(TRAINING_PROPORTIONS, values, strict=True)):
        ax = axes[0, col]
        mesh = ax.pcolormesh(np.arange(len(grads)), np.arange(len(momenta)), v, cmap="RdBu_r", vmin=-top,
                             vmax=top, shading="nearest")
        _signed_log_axis(ax, "x", grads)
        _signed_log_axis(ax, "y", momenta)
        ax.set_xlabel("gradient g (signed log grid)")
        ax.set_ylabel("momentum m before the step")
        ax.set_title(f"training proportion {t:g}", fontsize=9)
        slices = axes[1, col]
        for row in (len(momenta) // 2 - 11, len(momenta) // 2 - 1, len(momenta) // 2, len(momenta) // 2 + 10):
            slices.plot(np.arange(len(grads)), v[row], label=f"m = {momenta[row]:.0e}")
        _signed_log_axis(slices, "x", grads)
        slices.axhline(0.0, color="grey", lw=0.5)
        slices.set_xlabel("gradient g (signed log grid)")
        slices.set_ylabel("update u (subtracted from the parameter)")
        slices.legend(fontsize=7)
    fig.colorbar(mesh, ax=list(axes[0]), label=f"{'residual' if residual else 'update'} u = o0 1e-3 exp(1e-3 o1) "
                                                "(shared scale)")
    fig.suptitle(f"{_shown(residual)} in {label} against gradient and momentum, at training proportions "
                 f"{', '.join(f'{t:g}' for t in TRAINING_PROPORTIONS)}\n(held: {_typical_text()};\nbefore the "
                 "zero-mean shift over the agent's parameters, which removes any common offset; noise not shown)",
                 fontsize=9)
    return save_figure(fig, out / "open_update.png", DPI)


def noise_plot(meta: dict, label: str, out: Path, points: int = 41, residual: bool = False) -> Path:
    """The learned noise scale |o2| 1e-3 and the step |u| over training proportion: median and 10-90% band over
    the (g, m) grid's entries."""
    grads = momenta = grid_values(per_side=8)
    training = np.linspace(0.0, 1.0, points)
    grids = [update_grid(meta, grads, momenta, t) for t in training]
    fig, ax = plt.subplots(figsize=(7.0, 4.2), layout="constrained")
    for key, name, color in (("noise_scale", "noise scale |o2| 1e-3 (actor only)", "C3"),
                             ("step", "deterministic step |u|", "C0")):
        values = np.stack([np.abs(np.asarray(getattr(s, key))).ravel() for s in grids])  # [points, entries]
        lo, mid, hi = np.percentile(values, [10, 50, 90], axis=1)
        ax.plot(training, mid, color=color, label=f"{name}: median")
        ax.fill_between(training, lo, hi, color=color, alpha=0.2, label=f"{name}: 10-90%")
    ax.set_yscale("symlog", linthresh=1e-8)
    ax.set_xlabel("training proportion n / (N - 1)")
    ax.set_ylabel("magnitude (parameter units)")
    ax.legend(fontsize=7)
    added = " (added to Adam's update)" if residual else ""
    fig.suptitle(f"OPEN's learned noise{added} in {label} over training, over a (g, m) grid of +-1e-6..1e-1\n"
                 f"(held: {_typical_text()})", fontsize=9)
    return save_figure(fig, out / "open_noise.png", DPI)


def dormancy_plot(result: dict, label: str, env_id: str, out: Path) -> Path:
    """`metadisco.analysis.dormancy.dormancy_runs`'s result: dormant fraction and return per update, mean over
    seeds with the seeds' range."""
    from metadisco.analysis.dormancy import TAU

    config = result["config"]
    steps = (np.arange(config.num_updates) + 1) * config.batch_size
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0), layout="constrained")
    for (name, run), color in zip(result["runs"].items(), ("C0", "C1"), strict=False):
        for ax, key in zip(axes, ("dormant", "episode_return"), strict=True):
            values = run[key]
            ax.plot(steps, np.nanmean(values, axis=0), color=color, label=name)
            ax.fill_between(steps, np.nanmin(values, axis=0), np.nanmax(values, axis=0), color=color, alpha=0.2)
    axes[0].set_ylabel(f"dormant-unit fraction (tau = {TAU:g})")
    axes[1].set_ylabel("episode return (training)")
    for ax in axes:
        ax.set_xlabel("env steps")
        ax.legend(fontsize=8)
    seeds = next(iter(result["runs"].values()))["dormant"].shape[0]
    fig.suptitle(f"{label} against Adam (lr {config.lr:g}, annealed: {config.anneal_lr}) on {env_id}, "
                 f"{seeds} seeds each (the same keys); mean and range over seeds", fontsize=9)
    return save_figure(fig, out / "dormancy.png", DPI)


def open_plots(meta: Any, label: str, out: Path, residual: bool = False) -> list[Path]:
    """The figures that need no training: the update surface and the learned noise (`residual`: the optimiser's
    `residual` setting, which changes what the surface means)."""
    return [update_plot(meta, label, out, residual), noise_plot(meta, label, out, residual=residual)]
