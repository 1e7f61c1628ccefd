"""Fitness reductions and the ES sign: final return / area under the curve on hand-built metrics, and
`to_minimise` on many random generations with diverged members."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from metadisco.meta.fitness import to_minimise
from metadisco.meta.problem import combine, member_fitness
from metadisco.trainers.base import Metrics
from metadisco.trainers.metrics import diverged, final_return, mean_return, named_numbers


def metrics(returns, counts, actor_loss=None) -> Metrics:
    returns = np.asarray(returns, np.float32)
    zeros = np.zeros_like(returns)
    losses = {"actor_loss": zeros if actor_loss is None else np.asarray(actor_loss, np.float32), "value_loss": zeros}
    return Metrics(returns, np.asarray(counts, np.int32), zeros.astype(np.int32), losses, {"approx_kl": zeros})


def test_final_return_and_mean_return_weight_episodes_by_count():
    m = metrics(returns=[10.0, np.nan, 30.0, 50.0], counts=[1, 0, 3, 1])
    # window 0.5 of 4 updates -> the last 2: (3 x 30 + 1 x 50) / 4
    np.testing.assert_allclose(final_return(m, 0.5), 35.0)
    np.testing.assert_allclose(final_return(m, 0.01), 50.0)  # at least one update
    np.testing.assert_allclose(mean_return(m), (10 + 90 + 50) / 5)


def test_no_finished_episode_or_divergence_gives_nan():
    assert np.isnan(final_return(metrics([np.nan, np.nan], [0, 0]), 0.5))
    diverged = metrics([1.0, 2.0], [1, 1], actor_loss=[0.0, np.inf])
    assert np.isnan(final_return(diverged)) and np.isnan(mean_return(diverged))


def test_a_diverged_run_is_a_non_finite_loss_never_a_non_finite_diagnostic():
    rng = np.random.default_rng(7)
    for _ in range(50):
        updates = int(rng.integers(1, 9))
        base = metrics(rng.normal(size=updates), np.ones(updates, np.int32))
        bad, at = rng.choice([np.nan, np.inf, -np.inf]), int(rng.integers(updates))
        for name in base.losses:
            loss = base.losses[name].copy()
            loss[at] = bad
            broken = base._replace(losses={**base.losses, name: loss})
            assert bool(diverged(broken)) and np.isnan(final_return(broken)), name
        noisy = base._replace(diagnostics={"approx_kl": np.full(updates, bad, np.float32)})
        assert not bool(diverged(noisy)) and np.isfinite(mean_return(noisy))


def test_named_numbers_flatten_an_algorithm_s_own_names_and_refuse_a_clash():
    m = metrics([1.0, 2.0], [1, 1])
    assert list(named_numbers(m)) == ["episode_return", "episode_count", "truncation_count", "actor_loss",
                                      "value_loss", "approx_kl"]
    with pytest.raises(ValueError, match=r"\['episode_count'\] given twice"):
        named_numbers(m._replace(diagnostics={"episode_count": m.episode_count}))


def test_final_return_falls_back_to_the_latest_update_with_episodes():
    """A run with no episode ending inside the window (a CartPole agent at 500 steps per episode) scores the
    episodes of its latest update that finished any, not NaN; with episodes in the window nothing changes."""
    rng = np.random.default_rng(4)
    for updates in (1, 3, 8, 40):  # a few shapes, many runs each: op-by-op jnp compiles once per shape
        for window in rng.uniform(0.01, 0.5, 4):
            runs = 64
            sparse = rng.random((runs, updates)) < rng.uniform(0.02, 1.0, (runs, 1))
            counts = rng.integers(1, 3, (runs, updates)) * sparse
            returns = np.where(counts > 0, rng.normal(100.0, 50.0, (runs, updates)), np.nan).astype(np.float32)
            got = np.asarray(final_return(metrics(returns, counts), float(window)))
            start = updates - max(1, round(float(window) * updates))
            for r in range(runs):
                c, x = counts[r, start:], returns[r, start:]
                if c.sum() > 0:
                    np.testing.assert_allclose(got[r], np.sum(np.where(c > 0, x * c, 0.0)) / c.sum(), rtol=1e-5)
                elif counts[r].any():
                    assert got[r] == returns[r, np.flatnonzero(counts[r])[-1]]
                else:
                    assert np.isnan(got[r])


def test_to_minimise_negates_and_puts_diverged_members_last():
    """300 random generations; jitted as in meta-training, and of a few population sizes only (each size is a
    compilation: op by op, 38 sizes cost ~450 small compilations)."""
    rng = np.random.default_rng(0)
    minimise = jax.jit(to_minimise)
    for _ in range(300):
        size = int(rng.choice([2, 3, 8, 39]))
        fitness = rng.normal(0, 10 ** rng.uniform(-3, 3), size=size).astype(np.float32)
        bad = rng.random(fitness.size) < rng.uniform(0, 0.6)
        fitness[bad] = rng.choice([np.nan, np.inf, -np.inf], size=bad.sum())
        out = np.asarray(minimise(fitness))
        assert np.all(np.isfinite(out))
        np.testing.assert_array_equal(out[~bad], -fitness[~bad])
        if (~bad).any() and bad.any():
            assert out[bad].min() > out[~bad].max()
        if bad.all():
            np.testing.assert_array_equal(out, 0.0)


def test_member_fitness_is_nan_when_any_seed_diverged():
    fitness = member_fitness(np.array([[1.0, 3.0], [np.nan, 5.0], [2.0, np.inf]]))
    np.testing.assert_allclose(fitness[0], 2.0)
    assert np.isnan(fitness[1]) and np.isnan(fitness[2])


def test_combine_keeps_member_order_for_negative_baselines():
    rng = np.random.default_rng(1)
    for _ in range(100):
        a, b = rng.normal(size=8), -np.abs(rng.normal(size=8)) * 100  # b: negative returns (Acrobot-like)
        na, nb = rng.uniform(1, 10), -rng.uniform(50, 500)
        combined = combine([a, b], [na, nb])
        np.testing.assert_allclose(combined, (a / na + b / abs(nb)) / 2)
        # a member better on both tasks is better overall
        i, j = np.argmax(a), np.argmin(a)
        if b[i] >= b[j]:
            assert combined[i] >= combined[j]


def test_the_train_commands_return_curve_is_nanmean_without_its_warnings():
    """`metadisco train`'s per-update curve: the mean over the seeds that finished an episode, NaN where none did,
    bit for bit what np.nanmean gave, but without a RuntimeWarning per empty update (random holes, whole empty
    columns included)."""
    import warnings

    from metadisco.runs.seeds import mean_finished_return

    rng = np.random.default_rng(0)
    for _ in range(50):
        seeds, updates = rng.integers(1, 6), rng.integers(1, 40)
        counts = rng.integers(0, 3, (seeds, updates)) * (rng.random((seeds, updates)) < rng.random())
        returns = np.where(counts > 0, rng.normal(100, 50, (seeds, updates)), np.nan).astype(np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.nanmean(returns, axis=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = mean_finished_return(returns, counts)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
