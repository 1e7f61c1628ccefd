"""Statistics for comparing RL algorithms over few seeds (Agarwal et al., "Deep RL at the edge of the
statistical precipice", NeurIPS 2021): interquartile mean, stratified-bootstrap confidence intervals, the
probability of improvement (per pair, and as a matrix over methods), scores normalised between a random policy and a
reference, the optimality gap and performance profiles.

rliable 1.2 would be the natural library, but it needs `arch` < 8, and arch 7 does not import with pandas 3
(checked: `deprecate_kwarg() missing 1 required positional argument`). So the resampling is scipy's
`scipy.stats.bootstrap` (percentile intervals, as rliable's default) and the pairwise comparison is scipy's
Mann-Whitney U. Passing one sample per task to `scipy.stats.bootstrap` resamples each task's runs on their own,
which is exactly the stratified bootstrap.

Every function takes plain arrays of scores. Scores that are not finite (diverged runs) must be handled by the
caller: `finite` drops them (for IQM / mean, reported apart), `rank_failures_last` makes them lose every
comparison (for the probability of improvement).

`seed_mean` is the package's one policy for a mean over seeds (or runs) some of which are not finite, and
`best_point` its one rule for the best point of a tuning grid (meta-training's tuned fitness, an evaluation's
`--tune`, a leaderboard's lr grid); see there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

REPS = 2000  # bootstrap resamples (rliable's default)


def seed_mean(values, axis=-1, *, diverged: str) -> np.ndarray:
    """The mean over seeds (along `axis`; None: all) of returns or scores, some of which may not be finite: a
    run that diverged (NaN or inf) or finished no episode (NaN). The one policy, in two modes, chosen by what
    the mean is for:

    - `diverged="fail"`: NaN when any run is not finite. For ranking candidates against each other (the
      members of a population, the points of a sweep): a candidate that diverges on one seed must lose, and a
      mean over its surviving seeds would hide that.
    - `diverged="skip"`: the mean of the finite runs; NaN only when none is. For measuring one fixed point
      (the ES mean, the PPO baseline, a control run) whose runs are draws of the same thing: a rare diverged
      seed is reported apart (`finite`, `stat_block`), not allowed to erase the point's score.

    In the input's float precision (integers: float64), computed as numpy's own `mean` ("fail") and `nanmean`
    ("skip") compute it, so callers that moved here give the same bits; pass float64 for a float64 mean. Empty or
    all-non-finite input gives NaN without a warning.
    """
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.floating):
        values = values.astype(np.float64)
    ok = np.isfinite(values)
    zeroed = np.where(ok, values, values.dtype.type(0))
    if diverged == "fail":
        return np.where(np.all(ok, axis=axis), np.mean(zeroed, axis=axis), np.nan).astype(values.dtype)
    if diverged == "skip":
        count = np.sum(ok, axis=axis)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (np.sum(zeroed, axis=axis) / np.maximum(count, 1)).astype(values.dtype)
        return np.where(count > 0, mean, np.nan).astype(values.dtype)
    raise ValueError(f"diverged must be 'fail' or 'skip', got {diverged!r}")


def best_point(scores) -> np.ndarray:
    """The best point of a grid, by its scores [..., G, S] (S seeds or runs at each of G points): the index [...]
    of the point with the most finite scores, then the highest mean of them (float64, numpy's `mean` of the
    finite scores), the first of equals; -1 where no point has a finite score.

    A point where some seeds diverged or finished no episode is worse than one where none did, whatever its
    mean. Meta-training passes each member's fitness at each point as one score (S = 1; `seed_mean` with
    `diverged="fail"` made it, so a diverged seed already fails the point), evaluation and the leaderboard the
    score of every seed.
    """
    scores = np.asarray(scores, np.float64)
    if scores.ndim < 2 or scores.shape[-2] == 0:
        raise ValueError(f"best_point needs scores [..., G, S] with G >= 1, got shape {scores.shape}")
    chosen = np.full(scores.shape[:-2], -1, np.int64)
    for at in np.ndindex(*scores.shape[:-2]):
        best = (0, -np.inf)
        for g, row in enumerate(scores[at]):
            ok = np.isfinite(row)
            key = (int(ok.sum()), float(np.mean(row[ok])) if ok.any() else -np.inf)
            if key[0] and key > best:
                best, chosen[at] = key, g
    return chosen


def iqm(scores, axis=None) -> np.ndarray:
    """Interquartile mean: the mean of the middle 50% of `scores` (25% trimmed from each end)."""
    return stats.trim_mean(np.asarray(scores, dtype=np.float64), 0.25, axis=axis)


def finite(scores) -> np.ndarray:
    """The finite entries of a 1-D array of scores (diverged runs are NaN)."""
    scores = np.asarray(scores, dtype=np.float64).ravel()
    return scores[np.isfinite(scores)]


def rank_failures_last(scores) -> np.ndarray:
    """Non-finite scores (diverged runs) as -inf, so they compare below every finished run."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.where(np.isfinite(scores), scores, -np.inf)


def _percentile_ci(samples: Sequence[np.ndarray], statistic, reps: int, seed: int, confidence: float):
    result = stats.bootstrap(tuple(samples), statistic, vectorized=True, method="percentile", n_resamples=reps,
                             confidence_level=confidence, batch=500, rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def stratified_iqm_ci(strata: Sequence[np.ndarray], reps: int = REPS, seed: int = 0, confidence: float = 0.95
                      ) -> tuple[float, float] | None:
    """Stratified-bootstrap CI of the IQM of all scores pooled over `strata` (one 1-D array per task).

    Each task's runs are resampled within that task. None where no task has two or more scores (a bootstrap
    of one run says nothing).
    """
    strata = [np.asarray(s, dtype=np.float64).ravel() for s in strata]
    strata = [s for s in strata if s.size]
    if not strata or max(s.size for s in strata) < 2:
        return None
    # scipy needs two or more observations per sample; a task with one run is kept fixed (nothing to resample).
    fixed = [s for s in strata if s.size == 1]
    varied = [s for s in strata if s.size >= 2]
    fixed_values = np.concatenate(fixed) if fixed else np.empty(0)

    def statistic(*resampled, axis=-1):
        pooled = np.concatenate(resampled, axis=-1)
        if fixed_values.size:
            pooled = np.concatenate([pooled, np.broadcast_to(fixed_values, pooled.shape[:-1] + fixed_values.shape)],
                                    axis=-1)
        return iqm(pooled, axis=-1)

    return _percentile_ci(varied, statistic, reps, seed, confidence)


def probability_of_improvement(x, y) -> float:
    """P(X > Y) for one task: the chance that a random run of X scores above a random run of Y (ties count
    half), i.e. the Mann-Whitney U statistic of x over (len(x) * len(y))."""
    x, y = rank_failures_last(x), rank_failures_last(y)
    u = stats.mannwhitneyu(x, y, method="asymptotic").statistic
    return float(u / (x.size * y.size))


def aggregate_probability_of_improvement(pairs: Sequence[tuple[np.ndarray, np.ndarray]], reps: int = REPS,
                                         seed: int = 0, confidence: float = 0.95
                                         ) -> tuple[float, tuple[float, float] | None]:
    """Mean over tasks of P(X_task > Y_task), with a stratified-bootstrap CI (runs of X and of Y resampled
    within each task). `pairs` is one (x, y) pair of 1-D score arrays per task; non-finite scores lose."""
    pairs = [(rank_failures_last(x).ravel(), rank_failures_last(y).ravel()) for x, y in pairs]
    point = float(np.mean([probability_of_improvement(x, y) for x, y in pairs]))
    if any(x.size < 2 or y.size < 2 for x, y in pairs):
        return point, None
    samples = [s for pair in pairs for s in pair]

    def statistic(*resampled, axis=-1):
        per_task = [stats.mannwhitneyu(x, y, axis=-1, method="asymptotic").statistic / (x.shape[-1] * y.shape[-1])
                    for x, y in zip(resampled[0::2], resampled[1::2], strict=True)]
        return np.mean(per_task, axis=0)

    return point, _percentile_ci(samples, statistic, reps, seed, confidence)


def normalise(scores, random: float, reference: float) -> np.ndarray:
    """Scores between a random policy's return (0) and a reference's, such as tuned PPO's (1): the per-task
    normalisation of the field's aggregates (Agarwal et al. 2021, section 4; the reference must differ from random)."""
    if reference == random:
        raise ValueError("the reference return equals the random policy's: the normalisation has no unit")
    return (np.asarray(scores, dtype=np.float64) - random) / (reference - random)


def optimality_gap(scores, threshold: float = 1.0) -> float:
    """How far normalised scores fall short of `threshold` on average, scores above it counting as `threshold`:
    threshold - mean(min(scores, threshold)) (rliable's `metrics.aggregate_optimality_gap`; lower is better)."""
    scores = np.asarray(scores, dtype=np.float64)
    return float(threshold - np.mean(np.minimum(scores, threshold)))


def performance_profile(strata: Sequence[np.ndarray], taus) -> np.ndarray:
    """The run-score distribution: for each tau of `taus`, the fraction of runs, pooled over tasks (one 1-D
    array of normalised scores per task), that score above tau (rliable's `create_performance_profile`, its
    default `use_score_distribution=True`; with equal runs per task, the mean over tasks of each task's fraction)."""
    pooled = np.concatenate([np.asarray(s, dtype=np.float64).ravel() for s in strata])
    return np.asarray([np.mean(pooled > tau) for tau in np.asarray(taus, dtype=np.float64)])


def improvement_matrix(scores: dict[str, Sequence[np.ndarray]]) -> dict[str, dict[str, float]]:
    """P(row > column) for every ordered pair of methods: `scores` is {method: one 1-D score array per task, the
    tasks in one order}; each entry is the mean over tasks of `probability_of_improvement` (rliable's
    `probability_of_improvement` per task, averaged); the diagonal is 0.5."""
    names = list(scores)
    return {a: {b: 0.5 if a == b else float(np.mean([probability_of_improvement(x, y)
                                                         for x, y in zip(scores[a], scores[b], strict=True)]))
                for b in names} for a in names}


def mean_curve_ci(curves: np.ndarray, reps: int = REPS, seed: int = 0, confidence: float = 0.95
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over runs of learning curves [runs, points] with a per-point bootstrap CI of that mean.

    A point is given only where every run has a value (NaN: that run has finished no episode yet), so the mean
    never silently changes which runs it averages. Returns (mean, low, high), each [points], NaN elsewhere.
    """
    curves = np.asarray(curves, dtype=np.float64)
    ok = np.all(np.isfinite(curves), axis=0)
    mean, low, high = (np.full(curves.shape[1], np.nan) for _ in range(3))
    mean[ok] = curves[:, ok].mean(axis=0)
    if curves.shape[0] >= 2 and ok.any():
        result = stats.bootstrap((curves[:, ok],), np.mean, axis=0, vectorized=True, method="percentile",
                                 n_resamples=reps, confidence_level=confidence, batch=200,
                                 rng=np.random.default_rng(seed))
        low[ok] = result.confidence_interval.low
        high[ok] = result.confidence_interval.high
    return mean, low, high


def stat_block(scores: np.ndarray, seed: int) -> dict:
    """mean, IQM and IQM CI of the finite entries of `scores` [seeds]."""
    ok = finite(scores)
    ci = stratified_iqm_ci([ok], seed=seed) if ok.size else None
    return {
        "mean": float(ok.mean()) if ok.size else None,
        "std": float(ok.std(ddof=1)) if ok.size > 1 else None,
        "median": float(np.median(ok)) if ok.size else None,
        "iqm": float(iqm(ok)) if ok.size else None,
        "ci95": list(ci) if ci is not None else None,
    }
