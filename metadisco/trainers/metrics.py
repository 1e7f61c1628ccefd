"""Reductions of training metrics to one number per run: whether it diverged, its final return, its mean return.

They take `Metrics` whose leaves are [..., num_updates] and reduce the last axis, so they work inside `jit` on
vmapped results as well as on numpy arrays after the fact. What the ES is told (normalised, ranked, with its
sign fixed) is meta-training's own: `metadisco.meta.fitness`.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from metadisco.trainers.base import Metrics


def diverged(metrics: Metrics) -> jnp.ndarray:
    """True where any of a run's `losses` went non-finite at any update: [...]."""
    losses = jnp.stack([metrics.losses[name] for name in sorted(metrics.losses)], axis=-1)
    return jnp.any(~jnp.isfinite(losses), axis=(-2, -1))


def named_numbers(metrics: Metrics) -> dict[str, jnp.ndarray]:
    """Every per-update number of `metrics` by name, in field order, an algorithm's losses and diagnostics under
    their own names (what a metrics.jsonl line holds): {name: [..., num_updates]}. Achievements (one more axis) are
    left out."""
    numbers = {"episode_return": metrics.episode_return, "episode_count": metrics.episode_count,
               "truncation_count": metrics.truncation_count}
    for group in (metrics.losses, metrics.diagnostics):
        clash = sorted(set(group) & set(numbers))
        if clash:
            raise ValueError(f"metric name(s) {clash} given twice: an algorithm's losses and diagnostics need "
                             "names of their own, apart from the episode fields")
        numbers.update(group)
    if metrics.eval_return is not None:
        numbers["eval_return"] = metrics.eval_return
    return numbers


def _window_mean(metrics: Metrics, start: int) -> jnp.ndarray:
    returns = metrics.episode_return[..., start:]
    counts = metrics.episode_count[..., start:].astype(jnp.float32)
    total = jnp.sum(jnp.where(counts > 0, returns * counts, 0.0), axis=-1)
    n = jnp.sum(counts, axis=-1)
    return jnp.where(n > 0, total / jnp.maximum(n, 1.0), jnp.nan)


def final_return(metrics: Metrics, window: float = 0.05) -> jnp.ndarray:
    """Mean return of episodes finished in the last `window` fraction of updates (at least one update); where none
    finished there, the mean return of the episodes of the latest update that finished any.

    The fallback is for runs whose agent is good enough that no episode ends inside the window (CartPole's
    500-step episodes against a window of 256 steps per env): such a run must not read as diverged, which
    meta-training ranks below every member. Where the window has episodes the value is the window's mean, computed
    exactly as before the fallback existed (bit for bit). NaN where the run diverged or never finished an episode.
    Shape: metrics' leading axes.
    """
    num_updates = metrics.episode_return.shape[-1]
    start = num_updates - max(1, round(window * num_updates))
    in_window = _window_mean(metrics, start)
    updates = jnp.arange(num_updates)
    latest = jnp.max(jnp.where(metrics.episode_count > 0, updates, -1), axis=-1)  # -1: no episode ever ended
    at_latest = jnp.take_along_axis(metrics.episode_return, jnp.maximum(latest, 0)[..., None], axis=-1)[..., 0]
    value = jnp.where(jnp.isfinite(in_window), in_window, jnp.where(latest >= 0, at_latest, jnp.nan))
    return jnp.where(diverged(metrics), jnp.nan, value)


def mean_return(metrics: Metrics, window: float | None = None) -> jnp.ndarray:
    """Area under the learning curve: mean return of all episodes finished over training (NaN if diverged).
    `window` is accepted so every fitness has the same call shape, and ignored."""
    return jnp.where(diverged(metrics), jnp.nan, _window_mean(metrics, 0))


def eval_return(metrics: Metrics, window: float | None = None) -> jnp.ndarray:
    """The mean return of the deterministic evaluation episodes played after training (the agent's mode;
    DiscoBench's and OPEN's score), NaN where the run diverged. Needs a config with `eval_episodes` > 0 (without,
    a ValueError: the program never played them). `window` is ignored."""
    if metrics.eval_return is None:
        raise ValueError("eval_return needs deterministic evaluation episodes: train with eval_episodes > 0")
    return jnp.where(diverged(metrics), jnp.nan, metrics.eval_return[..., -1])


# Every fitness is `fn(metrics, window)`: the one call shape `reduce_fitness` relies on.
FITNESS_FNS = {"final_return": final_return, "mean_return": mean_return, "eval_return": eval_return}
# What each score of a trained run is, in words for tables and reports (evaluate, sweep, meta-training).
SCORE_WORDS = {"final_return": "final return (mean return of the episodes in the last 5% of updates)",
               "mean_return": "mean return of every episode of training (the area under the learning curve)",
               "eval_return": "deterministic episodes of each trained agent's mode (mean return)"}


def reduce_fitness(name: str, metrics: Metrics, final_window: float) -> jnp.ndarray:
    """The fitness called `name` of each run in `metrics`, over the trainer's final window where it has one:
    the one place a fitness name becomes numbers (meta-training, baselines, held-out evaluation)."""
    return FITNESS_FNS[name](metrics, final_window)


def learning_curve(returns: np.ndarray, counts: np.ndarray, batch_size: int, max_points: int = 100
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed learning curves on at most `max_points` points: (env_steps [P], returns [seeds, P]).

    `returns` [seeds, updates] is each update's mean return of finished episodes (NaN if none) and `counts`
    [seeds, updates] how many finished. Updates are binned; a bin's value is the mean return of the episodes
    that finished in it (weighted by their count), carried forward over bins where none finished; NaN before a
    seed's first finished episode. x is the env steps per seed at the end of each bin.
    """
    returns, counts = np.asarray(returns, np.float64), np.asarray(counts, np.float64)
    num_updates = returns.shape[-1]
    bins = np.array_split(np.arange(num_updates), min(num_updates, max_points))
    steps = np.array([(b[-1] + 1) * batch_size for b in bins], dtype=np.int64)
    weighted = np.where(counts > 0, np.nan_to_num(returns) * counts, 0.0)
    curve = np.full((returns.shape[0], len(bins)), np.nan)
    for j, b in enumerate(bins):
        n = counts[:, b].sum(axis=1)
        curve[:, j] = np.where(n > 0, weighted[:, b].sum(axis=1) / np.maximum(n, 1), np.nan)
    for j in range(1, len(bins)):  # carry the last finished episode's return forward
        curve[:, j] = np.where(np.isnan(curve[:, j]), curve[:, j - 1], curve[:, j])
    return steps, curve
