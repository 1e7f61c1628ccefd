"""Statistics on known data: IQM, bootstrap CIs, probability of improvement, learning-curve bands."""

import warnings

import numpy as np
import pytest

from metadisco.core import stats


def test_iqm_of_a_hand_made_sample():
    # 8 values: the middle 50% are 2, 3, 4, 5 whatever the outliers are.
    assert stats.iqm([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 100.0]) == pytest.approx(3.5)
    assert stats.iqm([5.0, -1e6, 4.0, 3.0, 2.0, 1e6, 1.0, 6.0]) == pytest.approx(3.5)
    # 4 values: one trimmed from each end.
    assert stats.iqm([10.0, 1.0, 2.0, 3.0]) == pytest.approx(2.5)


def test_iqm_ci_brackets_the_iqm_and_is_deterministic():
    rng = np.random.default_rng(3)
    scores = rng.normal(100.0, 20.0, size=8)
    lo, hi = stats.stratified_iqm_ci([scores], seed=1)
    assert lo <= stats.iqm(scores) <= hi
    assert lo < hi
    assert (lo, hi) == stats.stratified_iqm_ci([scores], seed=1)  # same seed, same interval
    # A constant sample has a point interval.
    assert stats.stratified_iqm_ci([np.full(5, 7.0)]) == (7.0, 7.0)
    # One run says nothing about spread.
    assert stats.stratified_iqm_ci([np.array([3.0])]) is None


def test_stratified_ci_resamples_within_tasks():
    # Two tasks at very different levels. Resampling within tasks keeps 4 runs of each in every resample, so the
    # pooled IQM varies far less than it would if runs could move between tasks.
    easy, hard = np.array([100.0, 101.0, 102.0, 103.0]), np.array([0.0, 1.0, 2.0, 3.0])
    lo, hi = stats.stratified_iqm_ci([easy, hard], seed=0)
    pooled = stats.iqm(np.concatenate([easy, hard]))
    assert lo <= pooled <= hi
    assert hi - lo < 10.0  # an unstratified bootstrap would swing by ~50


def test_probability_of_improvement_on_known_samples():
    assert stats.probability_of_improvement([3, 4, 5], [0, 1, 2]) == 1.0
    assert stats.probability_of_improvement([0, 1, 2], [3, 4, 5]) == 0.0
    assert stats.probability_of_improvement([1, 2, 3], [1, 2, 3]) == 0.5
    # pairs: 1<2, 1<3, 2=2 (half), 2<3 -> 0.5 / 4
    assert stats.probability_of_improvement([1, 2], [2, 3]) == pytest.approx(0.125)
    # A diverged run (NaN) loses every comparison: 5 beats both, NaN beats none -> 2 / 4.
    assert stats.probability_of_improvement([np.nan, 5.0], [1.0, 2.0]) == pytest.approx(0.5)


def test_aggregate_probability_of_improvement_averages_tasks():
    rng = np.random.default_rng(0)
    better = (rng.normal(1.0, 1.0, 8), rng.normal(0.0, 1.0, 8))
    tied = (np.arange(8.0), np.arange(8.0))
    p, (lo, hi) = stats.aggregate_probability_of_improvement([better, tied], seed=0)
    expected = (stats.probability_of_improvement(*better) + 0.5) / 2
    assert p == pytest.approx(expected)
    assert lo <= p <= hi
    assert 0.0 <= lo < hi <= 1.0


def test_mean_curve_ci_only_where_every_run_has_a_value():
    curves = np.array([[np.nan, 1.0, 2.0, 4.0],
                       [np.nan, np.nan, 4.0, 4.0],
                       [0.0, 3.0, 6.0, 4.0]])
    mean, lo, hi = stats.mean_curve_ci(curves)
    assert np.isnan(mean[:2]).all() and np.isnan(lo[:2]).all()
    assert mean[2:] == pytest.approx([4.0, 4.0])
    assert lo[2] <= 4.0 <= hi[2] and lo[2] < hi[2]
    assert lo[3] == hi[3] == 4.0


def test_seed_mean_policy_on_many_random_arrays():
    """The one NaN policy: "fail" is NaN exactly where a run is not finite, else the plain mean; "skip" is the
    mean of the finite runs (numpy's nanmean, bit for bit), NaN only where none is finite."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        shape = tuple(rng.integers(1, 6, size=rng.integers(1, 4)))
        x = rng.normal(size=shape) * 10 ** rng.uniform(-3, 3)
        bad = rng.random(shape) < rng.choice([0.0, 0.2, 0.7, 1.0])
        x[bad] = rng.choice([np.nan, np.inf, -np.inf], size=int(bad.sum()))
        axis = int(rng.integers(-len(shape), len(shape)))
        ok = np.isfinite(x)
        fail = stats.seed_mean(x, axis, diverged="fail")
        assert np.array_equal(np.isnan(fail), ~np.all(ok, axis=axis))
        every = np.all(ok, axis=axis)
        with np.errstate(invalid="ignore"):  # inf - inf in the columns the mask drops
            assert np.array_equal(fail[every], np.mean(x, axis=axis)[every])
        skip = stats.seed_mean(x, axis, diverged="skip")
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.nanmean(np.where(ok, x, np.nan), axis=axis)
        assert np.array_equal(skip, expected, equal_nan=True)
        assert np.array_equal(np.isnan(skip), ~np.any(ok, axis=axis))
    assert np.isnan(stats.seed_mean([np.nan, np.inf], None, diverged="skip"))
    with pytest.raises(ValueError, match="fail' or 'skip"):
        stats.seed_mean([1.0], diverged="drop")


# -- the field's aggregates, checked against rliable's definitions (rliable/metrics.py) on fixed score arrays -----

FIXED = np.array([[0.2, 1.3, -0.1], [0.8, 1.0, 0.4], [1.1, 0.9, 0.5], [0.6, 1.2, 0.0]])  # [runs, tasks], normalised


def test_iqm_is_rliables_trimmed_mean_over_runs_and_tasks():
    from scipy.stats import trim_mean

    assert stats.iqm(FIXED) == pytest.approx(trim_mean(FIXED, proportiontocut=0.25, axis=None))
    assert stats.iqm([1.0, 2.0, 3.0, 100.0]) == pytest.approx(2.5)  # the middle half of four: 2 and 3


def test_optimality_gap_is_gamma_minus_the_mean_of_scores_clipped_at_gamma():
    assert stats.optimality_gap([0.2, 0.8, 1.3, 1.0]) == pytest.approx(0.25)  # 1 - mean(0.2, 0.8, 1, 1)
    assert stats.optimality_gap(FIXED) == pytest.approx(1.0 - np.mean(np.minimum(FIXED, 1.0)))
    assert stats.optimality_gap(FIXED, threshold=0.5) == pytest.approx(0.5 - np.mean(np.minimum(FIXED, 0.5)))


def test_the_performance_profile_is_the_run_score_distribution():
    taus = [-0.5, 0.0, 0.5, 1.0, 2.0]
    profile = stats.performance_profile(list(FIXED.T), taus)  # one array of runs per task
    # rliable: np.mean(scores > tau) over the whole [runs, tasks] matrix, for each tau
    np.testing.assert_allclose(profile, [np.mean(np.greater(FIXED, tau)) for tau in taus])
    np.testing.assert_allclose(profile, [1.0, 10 / 12, 7 / 12, 3 / 12, 0.0])


def test_the_improvement_matrix_is_the_mean_over_tasks_of_mann_whitney_u_over_mn():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 0.0])
    # U counts x's wins over y's runs, ties half: 1 > 0; 2 > 0 and two ties; 3 beats all three -> 6 of 9
    assert stats.probability_of_improvement(x, y) == pytest.approx(6 / 9)
    matrix = stats.improvement_matrix({"a": [x, FIXED[:, 0]], "b": [y, FIXED[:, 1]]})
    second = np.mean([a > b for a in FIXED[:, 0] for b in FIXED[:, 1]]) + 0.5 * np.mean(
        [a == b for a in FIXED[:, 0] for b in FIXED[:, 1]])
    assert matrix["a"]["b"] == pytest.approx((6 / 9 + second) / 2)
    assert matrix["a"]["b"] + matrix["b"]["a"] == pytest.approx(1.0) and matrix["a"]["a"] == 0.5


def test_normalising_puts_random_at_zero_and_the_reference_at_one():
    np.testing.assert_allclose(stats.normalise([10.0, 20.0, 30.0], random=10.0, reference=30.0), [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="no unit"):
        stats.normalise([1.0], random=2.0, reference=2.0)


def test_best_point_is_the_most_scored_point_then_the_best_mean_for_random_inputs():
    rng = np.random.default_rng(0)
    for _ in range(300):
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(1, 5)))
        scores = rng.normal(size=shape)
        scores[rng.random(shape) < 0.3] = rng.choice([np.nan, np.inf, -np.inf])
        scores[rng.random(shape) < 0.2] = 0.5  # ties
        chosen = stats.best_point(scores)
        assert chosen.shape == shape[:1]
        for row, c in zip(scores, chosen, strict=True):
            keys = [(int(np.isfinite(p).sum()), float(np.mean(p[np.isfinite(p)])) if np.isfinite(p).any()
                     else -np.inf) for p in row]
            if max(k[0] for k in keys) == 0:
                assert c == -1
                continue
            assert keys[c] == max(keys) and c == keys.index(max(keys))  # the first of equals


def test_best_point_refuses_scores_without_a_grid_axis():
    with pytest.raises(ValueError, match="G, S"):
        stats.best_point(np.zeros(3))
    with pytest.raises(ValueError, match="G >= 1"):
        stats.best_point(np.zeros((0, 3)))
