"""Figures of an objective's pieces, each beside its handcrafted reference (matplotlib, Agg backend).

    drift_heatmap_{linear,log}.png  rows: drift, r A - drift, -dL/dr over (r, A); columns: this drift, PPO, DPO;
                                    one colour scale per row, shared by the compared panels
    drift_slices_{linear,log}.png   the same three quantities against r at fixed A (rollback for A < 0,
                                    cautious optimism for A > 0)
    drift_progress.png              progress-aware drifts (TA-LPO): the heatmaps at several values of n / N
    value_loss.png                  loss and its slope against v - target, beside L2
    td_loss.png                     a TD loss that reads the target's parts (learned_td, dqn_clipped): loss and slope
                                    against the TD error at fixed Q(s, a), beside DQN's and DQNReg's
    optimizer.png                   the update (in units of the learning rate) against gradient and momentum,
                                    beside Adam's (an optimiser that needs the trainer's context, OPEN, has
                                    its own figures instead: open_update.png, open_noise.png,
                                    `metadisco.analysis.open_figures`)
    dormancy.png                    only when asked (`dormancy`: it trains): the dormant-unit fraction per update
                                    of the objective's optimiser and of Adam on the same seeds
    trace.png                       a TD objective's (PQN's) lambda against training progress, after a greedy
                                    and after an exploratory action, beside Peng's (PQN) and Watkins's; a TD
                                    objective has no policy, so it gets no drift figures
    population_curve.png            for a run directory: the population's fitness per generation and the ES
                                    mean's on fresh seeds (`metadisco.figures.meta_curve`)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from metadisco.analysis.surfaces import DEFAULT_HORIZON, Surface, progress, r_values, surface
from metadisco.figures import pyplot, save_figure
from metadisco.objectives import BUILTIN_OBJECTIVES, OPTIMIZERS, TRACES, VALUE_LOSSES, Objective
from metadisco.objectives.registry import OptimizerInputs, Progress, TraceInputs, ValueLossInputs

plt = pyplot()

QUANTITIES = (("drift", "drift(r, A)"), ("objective", "r A - drift"), ("neg_grad", "-dL/dr = A - d drift/dr"))
SLICE_ADVANTAGES = (-3.0, -1.0, 1.0, 3.0)
PROGRESS_VALUES = (0.0, 0.25, 0.5, 0.75, 1.0)
DPI = 110


def _log_axis(ax) -> None:
    """Log-scaled r axis with a few plain tick labels (matplotlib's minor labels overlap at this width)."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.set_xticks([0.2, 0.5, 1.0, 2.0, 5.0])
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())


def _save(fig, path: Path) -> Path:
    return save_figure(fig, path, DPI)


def _references(objective: Objective, meta: Any) -> list[tuple[str, Objective, Any]]:
    """PPO and DPO, minus any that is the same drift as `objective`'s (no duplicate columns)."""
    own = objective.drift.name, objective.drift.options()
    refs = []
    for name in ("ppo", "dpo"):
        ref = BUILTIN_OBJECTIVES[name]
        if (ref.drift.name, ref.drift.options()) != own or jax.tree.leaves(meta["drift"]):
            refs.append((name.upper(), ref, ref.zero_meta()))
    return refs


def _norm_limits(values: list[np.ndarray], signed: bool) -> tuple[float, float]:
    finite = np.concatenate([v[np.isfinite(v)].ravel() for v in values] or [np.zeros(1)])
    top = float(np.max(np.abs(finite))) if finite.size else 1.0
    top = top if top > 0 else 1.0
    return (-top, top) if signed else (0.0, float(np.max(finite)) if np.max(finite) > 0 else 1.0)


def _heatmap_grid(surfaces: list[tuple[str, Surface]], grid: str, title: str, path: Path,
                  shared: str = "row") -> Path:
    """Panels [quantity x surface]; colour scale shared along each row (`shared="row"`) or column."""
    rows, cols = (QUANTITIES, surfaces) if shared == "row" else (surfaces, QUANTITIES)
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(4.2 * len(cols), 3.3 * len(rows)), squeeze=False,
                             layout="constrained")
    level = 0.01 * max(float(np.nanmax(s.drift)) for _, s in surfaces) or 1e-6
    for q_index, (key, label) in enumerate(QUANTITIES):
        values = [getattr(s, key) for _, s in surfaces]
        vmin, vmax = _norm_limits(values, signed=key != "drift")
        cmap = "viridis" if key == "drift" else "RdBu_r"
        mesh = None
        for s_index, (name, s) in enumerate(surfaces):
            ax = axes[q_index, s_index] if shared == "row" else axes[s_index, q_index]
            mesh = ax.pcolormesh(s.r, s.a, getattr(s, key), cmap=cmap, vmin=vmin, vmax=vmax, shading="auto")
            # Where the drift becomes appreciable (1% of the row's largest drift): the "clip" boundary.
            ax.contour(s.r, s.a, s.drift, levels=[level], colors="k", linewidths=0.6)
            if grid == "log":
                _log_axis(ax)
            ax.axvline(1.0, color="grey", lw=0.5, ls=":")
            ax.set_xlabel("ratio r")
            ax.set_ylabel("advantage A")
            ax.set_title(f"{name}: {label}", fontsize=9)
        if shared == "row":
            fig.colorbar(mesh, ax=list(axes[q_index, :]), label=label, shrink=0.9)
        else:
            fig.colorbar(mesh, ax=list(axes[:, q_index]), label=label, shrink=0.9)
    fig.suptitle(f"{title}  (black line: drift = 1% of its largest value; one colour scale per "
                 f"{'row' if shared == 'row' else 'column'})", fontsize=10)
    return _save(fig, path)


def drift_heatmaps(objective: Objective, meta: Any, label: str, out: Path, grid: str,
                   fraction: float = 0.0, num_updates: float = DEFAULT_HORIZON) -> Path:
    entries = [(label, objective, meta)] + _references(objective, meta)
    surfaces = [(name, surface(o, m, grid, fraction=fraction, num_updates=num_updates)) for name, o, m in entries]
    span = "r in [0.5, 1.5]" if grid == "linear" else "r = exp(u), u in [-2, 2] (log axis)"
    return _heatmap_grid(surfaces, grid, f"drift of {label} vs PPO / DPO, {span}", out / f"drift_heatmap_{grid}.png")


def drift_progress(objective: Objective, meta: Any, label: str, out: Path,
                   num_updates: float = DEFAULT_HORIZON) -> Path:
    surfaces = [(f"{label} at n/N = {p:g}", surface(objective, meta, "linear", fraction=p, num_updates=num_updates))
                for p in PROGRESS_VALUES]
    return _heatmap_grid(surfaces, "linear", f"{label} through training (N = {num_updates:g} updates)",
                         out / "drift_progress.png", shared="column")


def depends_on_progress(objective: Objective, meta: Any, num_updates: float = DEFAULT_HORIZON) -> bool:
    """True for a progress-aware drift kind (TA-LPO) or a drift whose values change with n / N."""
    if objective.drift.name == "talpo":
        return True
    a, b = (surface(objective, meta, "linear", fraction=f, num_updates=num_updates).drift for f in (0.0, 1.0))
    return not np.allclose(a, b)


def drift_slices(objective: Objective, meta: Any, label: str, out: Path, grid: str,
                 fraction: float = 0.0, num_updates: float = DEFAULT_HORIZON) -> Path:
    from metadisco.analysis.surfaces import drift_values

    entries = [(label, objective, meta)] + _references(objective, meta)
    r = r_values(grid, 301)
    fig, axes = plt.subplots(len(QUANTITIES), len(SLICE_ADVANTAGES), figsize=(3.8 * len(SLICE_ADVANTAGES), 8.4),
                             squeeze=False, sharex=True, layout="constrained")
    styles = ("-", "--", ":")
    for col, adv in enumerate(SLICE_ADVANTAGES):
        for (name, o, m), style in zip(entries, styles, strict=False):
            d, dd = drift_values(o, m, r, np.full_like(r, adv), fraction, num_updates)
            for row, values in enumerate((d, r * adv - d, adv - dd)):
                axes[row, col].plot(r, values, style, label=name, lw=1.6 if style == "-" else 1.2)
        for row, (_, qlabel) in enumerate(QUANTITIES):
            ax = axes[row, col]
            ax.axvline(1.0, color="grey", lw=0.5, ls=":")
            ax.axhline(0.0, color="grey", lw=0.5)
            if grid == "log":
                _log_axis(ax)
            ax.set_ylabel(qlabel)
            if row == len(QUANTITIES) - 1:
                ax.set_xlabel("ratio r")
        axes[0, col].set_title(f"A = {adv:g} ({'rollback side' if adv < 0 else 'cautious-optimism side'})",
                               fontsize=9)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"drift of {label} against r at fixed advantage, beside PPO / DPO", fontsize=10)
    return _save(fig, out / f"drift_slices_{grid}.png")


def value_loss_plot(objective: Objective, meta: Any, label: str, out: Path) -> Path:
    """Loss and slope against the error v - target, beside L2: near zero (|e| <= 3) and over the errors a critic
    of returns in the hundreds makes (|e| <= 100), where the second row shows the slope relative to L2's (1 is
    L2's pull; below 1 the loss pulls the value less than L2 would, above 1 more, below 0 it pushes it away)."""
    prog = progress(0.0)
    l2 = VALUE_LOSSES.make("l2")

    def curve(piece, piece_meta, d):
        # value = target + d with old_value = target: the loss at the start of an update (no value clipping).
        fn = lambda x: piece(piece_meta, ValueLossInputs(x, jnp.zeros_like(x), jnp.zeros_like(x)), prog)
        loss = fn(jnp.asarray(d))
        slope = jax.vmap(jax.grad(lambda x: fn(x[None])[0]))(jnp.asarray(d))
        return np.asarray(loss), np.asarray(slope)

    entries = [(label, objective.value_loss, meta["value_loss"]), ("L2", l2, {})]
    near = np.linspace(-3.0, 3.0, 401).astype(np.float32)
    far = np.linspace(-100.0, 100.0, 801).astype(np.float32)
    far = far[np.abs(far) > 0.05]  # the relative slope is 0 / 0 at e = 0
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.2), layout="constrained")
    for (name, piece, piece_meta), style in zip(entries, ("-", "--"), strict=True):
        loss, slope = curve(piece, piece_meta, near)
        axes[0, 0].plot(near, loss, style, label=f"{name} ({piece.name})")
        axes[0, 1].plot(near, slope, style, label=f"{name} ({piece.name})")
        loss, slope = curve(piece, piece_meta, far)
        axes[1, 0].plot(far, loss, style, label=f"{name} ({piece.name})")
        axes[1, 1].plot(far, slope / far, style, label=f"{name} ({piece.name})")
    axes[0, 0].set_ylabel("loss")
    axes[0, 1].set_ylabel("d loss / d v")
    axes[1, 0].set_ylabel("loss")
    axes[1, 0].set_yscale("symlog", linthresh=1.0)
    axes[1, 1].set_ylabel("slope / L2's slope (its pull relative to L2)")
    axes[1, 1].axhline(0.0, color="grey", lw=0.5, ls=":")  # below 0 the loss pushes v away from the target
    for ax in axes.flat:
        ax.set_xlabel("v - target")
        ax.axvline(0.0, color="grey", lw=0.5, ls=":")
        ax.legend(fontsize=8)
    fig.suptitle(f"value loss of {label} beside L2: near 0 (top) and over large errors (bottom)", fontsize=10)
    return _save(fig, out / "value_loss.png")


TD_SLICE_QS = (0.0, 5.0, 20.0)


def td_loss_plot(objective: Objective, meta: Any, label: str, out: Path) -> Path:
    """A TD loss against delta = Q - Y at fixed Q(s, a) (`TD_SLICE_QS`; Y = Q - delta and Q' = Y: a reward-free
    step, discount 1), loss (top) and its slope d loss / d Q (bottom), beside DQN's (0.5 delta^2) and DQNReg's
    (delta^2 + 0.1 Q), as the drift slices are drawn at fixed A."""
    prog = progress(0.0)
    delta = np.linspace(-8.0, 8.0, 401).astype(np.float32)
    entries = [(label, objective.value_loss, meta["value_loss"]), ("DQN", VALUE_LOSSES.make("l2"), {}),
               ("DQNReg", VALUE_LOSSES.make("dqn_reg"), {})]

    def curve(piece, piece_meta, q0: float):
        def loss_at(q, d):  # the target stays fixed while Q moves: the slope is the loss's pull on Q(s, a)
            target = jnp.full_like(q, q0) - d
            return piece(piece_meta, ValueLossInputs(q, q, target, target, jnp.ones_like(q)), prog)

        d = jnp.asarray(delta)
        q = jnp.full_like(d, q0)
        slope = jax.vmap(jax.grad(lambda qi, di: loss_at(qi[None], di[None])[0]))(q, d)
        return np.asarray(loss_at(q, d)), np.asarray(slope)

    fig, axes = plt.subplots(2, len(TD_SLICE_QS), figsize=(4 * len(TD_SLICE_QS), 6.4), layout="constrained")
    for j, q0 in enumerate(TD_SLICE_QS):
        for (name, piece, piece_meta), style in zip(entries, ("-", "--", ":"), strict=True):
            loss, slope = curve(piece, piece_meta, q0)
            axes[0, j].plot(delta, loss, style, label=f"{name} ({piece.name})")
            axes[1, j].plot(delta, slope, style, label=f"{name} ({piece.name})")
        axes[0, j].set_title(f"Q(s, a) = {q0:g}", fontsize=9)
        for ax in axes[:, j]:
            ax.set_xlabel("TD error delta = Q(s, a) - Y")
            ax.axvline(0.0, color="grey", lw=0.5, ls=":")
            ax.legend(fontsize=7)
    axes[0, 0].set_ylabel("loss")
    axes[1, 0].set_ylabel("d loss / d Q(s, a)")
    fig.suptitle(f"TD loss of {label} beside DQN's and DQNReg's, at fixed Q(s, a)", fontsize=10)
    return _save(fig, out / "td_loss.png")


def optimizer_updates(piece, piece_meta, grads: np.ndarray, momenta: np.ndarray, lr: float = 1e-3,
                      warmup: int = 20, total_steps: int = 1000) -> np.ndarray:
    """The update of one scalar parameter (in units of lr) after `warmup` steps of gradient m then one of g:
    [len(momenta), len(grads)]. No gradient clipping (max_grad_norm = 1e9), so the rule itself is shown."""
    opt = piece(piece_meta, OptimizerInputs(lr, 1e9, total_steps), progress(0.0))

    def one(g, m):
        params = jnp.zeros((), jnp.float32)
        state = opt.init(params)

        def step(carry, _):
            p, s = carry
            u, s = opt.update(m, s, p)
            return (optax.apply_updates(p, u), s), None

        (params, state), _ = jax.lax.scan(step, (params, state), None, warmup)
        update, _ = opt.update(g, state, params)
        return update / lr

    g, m = np.meshgrid(grads.astype(np.float32), momenta.astype(np.float32))
    return np.asarray(jax.jit(jax.vmap(one))(g.ravel(), m.ravel())).reshape(g.shape)


def optimizer_plot(objective: Objective, meta: Any, label: str, out: Path) -> Path:
    grads = np.linspace(-1.0, 1.0, 41)
    momenta = np.linspace(-1.0, 1.0, 41)
    entries = [(f"{label} ({objective.optimizer.name})", objective.optimizer, meta["optimizer"]),
               ("Adam", OPTIMIZERS.make("adam"), {})]
    values = [optimizer_updates(p, m, grads, momenta) for _, p, m in entries]
    vmin, vmax = _norm_limits(values, signed=True)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
    for ax, (name, _, _), v in zip(axes[:2], entries, values, strict=True):
        mesh = ax.pcolormesh(grads, momenta, v, cmap="RdBu_r", vmin=vmin, vmax=vmax, shading="auto")
        ax.set_xlabel("gradient g (this step)")
        ax.set_ylabel("momentum (gradient of the previous 20 steps)")
        ax.set_title(name, fontsize=9)
    fig.colorbar(mesh, ax=list(axes[:2]), label="update / learning rate (shared scale)")
    for (name, _, _), v, style in zip(entries, values, ("-", "--"), strict=True):
        for row, color in zip((20, 30), ("C0", "C1"), strict=True):
            axes[2].plot(grads, v[row], style, color=color, label=f"{name}, momentum {momenta[row]:.1f}")
    axes[2].set_xlabel("gradient g (this step)")
    axes[2].set_ylabel("update / learning rate")
    axes[2].legend(fontsize=7)
    fig.suptitle(f"optimiser of {label} beside Adam (one scalar parameter, lr 1e-3, no clipping)", fontsize=10)
    return _save(fig, out / "optimizer.png")


def trace_plot(objective: Objective, meta: Any, label: str, out: Path, lam: float = 0.65,
               num_updates: float = DEFAULT_HORIZON) -> Path:
    """lambda_t against n / N after a greedy and after an exploratory action, at the trainer's lambda `lam`
    (PQN's MinAtar setting by default), beside Peng's and Watkins's traces."""
    fractions = np.linspace(0.0, 1.0, 101).astype(np.float32)
    entries = [(f"{label} ({objective.trace.name})", objective.trace, meta["trace"], "-"),
               ("Peng (PQN)", TRACES.make("peng"), {}, "--"), ("Watkins", TRACES.make("watkins"), {}, ":")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained", sharey=True)
    for ax, greedy, title in zip(axes, (1.0, 0.0), ("next action greedy", "next action exploratory"), strict=True):
        for name, piece, piece_meta, style in entries:
            one = lambda f, piece=piece, piece_meta=piece_meta, greedy=greedy: piece(
                piece_meta, TraceInputs(jnp.float32(lam), jnp.full((1,), greedy, jnp.float32)),
                Progress(f, jnp.float32(num_updates)))[0]
            values = np.asarray(jax.vmap(one)(jnp.asarray(fractions)))
            ax.plot(fractions, values, style, label=name)
        ax.set_xlabel("training progress n / N")
        ax.set_title(title, fontsize=9)
        ax.set_ylim(-0.05, 1.05)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("lambda_t")
    fig.suptitle(f"Q(lambda) trace of {label} at lambda = {lam:g}, beside Peng's and Watkins's", fontsize=10)
    return _save(fig, out / "trace.png")


def plot_objective(objective: Objective, meta: Any, label: str, out: Path, run_dir: Path | None = None,
                   num_updates: float = DEFAULT_HORIZON, dormancy: dict | None = None) -> list[Path]:
    """Every figure for `objective` into `out`; with `run_dir` (a run directory with metrics.jsonl), the
    population's fitness per generation too (population_curve.png); with `dormancy` ({"env_id", "timesteps",
    "seeds"}: `metadisco.analysis.dormancy.dormancy_runs`'s arguments), training runs of the optimiser and of Adam
    and their dormant-unit fractions (dormancy.png)."""
    out = Path(out)
    paths = []
    from metadisco.trainers.algorithm import get_algorithm

    if "drift" in get_algorithm(objective.algorithm).slots:  # a TD objective (PQN, DQN) has no policy to drift
        for grid in ("linear", "log"):
            paths.append(drift_heatmaps(objective, meta, label, out, grid, num_updates=num_updates))
            paths.append(drift_slices(objective, meta, label, out, grid, num_updates=num_updates))
        if depends_on_progress(objective, meta, num_updates):
            paths.append(drift_progress(objective, meta, label, out, num_updates))
    if objective.value_loss.reads_target_parts:  # drawn against the TD error at fixed Q
        paths.append(td_loss_plot(objective, meta, label, out))
    else:
        paths.append(value_loss_plot(objective, meta, label, out))
    if objective.optimizer.name == "open":
        from metadisco.analysis.open_figures import open_plots

        paths.extend(open_plots(meta["optimizer"], label, out, objective.optimizer.residual))
    elif not objective.optimizer.needs_context:  # optimizer_updates steps it without a trainer's context
        paths.append(optimizer_plot(objective, meta, label, out))
    if objective.trace is not None:
        paths.append(trace_plot(objective, meta, label, out, num_updates=num_updates))
    if dormancy is not None:
        from metadisco.analysis.dormancy import dormancy_runs
        from metadisco.analysis.open_figures import dormancy_plot

        result = dormancy_runs(objective, meta, **dormancy)
        paths.append(dormancy_plot(result, label, dormancy["env_id"], out))
    if run_dir is not None:
        from metadisco.figures.meta_curve import POPULATION_CURVE, meta_curve
        from metadisco.runs.rundir import RunDir

        runs = RunDir(run_dir, writer=False)
        if runs.has_metrics():
            paths.append(meta_curve(runs.read_metrics(), None, out / POPULATION_CURVE, title=Path(run_dir).name))
    return paths
