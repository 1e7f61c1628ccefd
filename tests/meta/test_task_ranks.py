"""`combine: rank`: every task of a generation counts equally in what the ES is told (the mean over tasks of the
members' centred ranks within each task), while metrics.jsonl keeps reporting the normalised mean and adds what
each task contributed (`task_fitness`, `task_spread`). Without the key a run is bit-identical to before.

The runs are tiny (4 envs x 16 steps, hidden-8 nets, population 4 over the 4 test devices), two tasks every
generation, and share compiled programs through `metadisco.meta.tasks._PROGRAMS`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.meta import paired
from metadisco.meta.baselines import measure_baselines
from metadisco.meta.fitness import centered_ranks, mean_task_ranks, to_minimise
from metadisco.meta.load import parse_config
from metadisco.meta.loop import meta_train
from metadisco.meta.step import GenerationStep
from metadisco.parallel import hosts

DATA = Path(__file__).resolve().parent.parent / "data"
sys.path.insert(0, str(DATA))
try:
    import record_pre_task_ranks as recorder
finally:
    sys.path.remove(str(DATA))

RANK = recorder.config(combine="rank", eval_every=1)  # the ES mean scored every generation: a resume point too
NAMES = ["CartPole-v1@256", "UmbrellaChain-bsuite@512"]


def metrics(out) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------------------------------------------------
# the rank combination


def test_one_task_gives_its_centred_ranks():
    rng = np.random.default_rng(0)
    for P in (1, 2, 3, 8):
        scores = rng.normal(size=P)
        np.testing.assert_array_equal(mean_task_ranks([scores]), centered_ranks(scores))
        # distinct scores: evosax's centred ranks exactly (argsort of argsort, / (P - 1) - 0.5)
        expected = np.argsort(np.argsort(scores)) / max(P - 1, 1) - 0.5 if P > 1 else np.zeros(1)
        np.testing.assert_array_equal(centered_ranks(scores), expected)


def test_ties_share_their_mean_rank_and_non_finite_ranks_worst():
    np.testing.assert_array_equal(centered_ranks([1.0, 1.0, 2.0]), [-0.25, -0.25, 0.5])
    np.testing.assert_array_equal(centered_ranks([3.0, 3.0, 3.0]), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(centered_ranks([-1e300, np.nan, 5.0]), [0.0, -0.5, 0.5])
    np.testing.assert_allclose(centered_ranks([np.nan, np.inf, 0.0, -np.inf]), [-1 / 6, -1 / 6, 0.5, -1 / 6])
    # a task with no finite score orders nothing and is left out; none left: NaN, which the ES sees as a tie
    np.testing.assert_array_equal(mean_task_ranks([[np.nan, np.nan, np.nan], [2.0, 0.0, 1.0]]), [0.5, -0.5, 0.0])
    # a member diverged on one task is NaN overall (the ES's worst), as under combine: mean
    told = mean_task_ranks([[1.0, np.nan, 0.0], [0.0, 2.0, 1.0]])
    assert np.isnan(told[1]) and np.asarray(to_minimise(told))[1] > np.asarray(to_minimise(told))[[0, 2]].max()
    told = mean_task_ranks([[np.nan] * 4, [np.nan] * 4])
    assert np.all(np.isnan(told)) and np.all(np.asarray(to_minimise(told)) == 0)


def test_every_task_counts_equally_whatever_its_scale():
    """The campaign-4 case: a task whose normalised scores spread widely (PPO barely above random) orders the
    mean alone; its ranks count as much as a near-ceiling task's."""
    wide, narrow = np.array([0.1, 1.1, 0.6]), np.array([1.05, 0.95, 1.0])
    mean = np.mean([wide, narrow], axis=0)
    assert list(np.argsort(mean)) == list(np.argsort(wide))  # the mean is the wide task's order
    np.testing.assert_array_equal(mean_task_ranks([wide, narrow]), [0.0, 0.0, 0.0])  # opposite orders cancel


def test_ranks_are_invariant_to_any_positive_affine_rescaling_of_each_task():
    rng = np.random.default_rng(1)
    for _ in range(500):
        T, P = rng.integers(1, 6), rng.integers(1, 13)
        # small integers (many ties), some members diverged
        scores = rng.integers(-5, 6, (T, P)).astype(np.float64)
        scores[rng.random((T, P)) < 0.15] = np.nan
        rescaled = scores * np.exp(rng.uniform(-4, 4, (T, 1))) + rng.uniform(-1e3, 1e3, (T, 1))
        told = mean_task_ranks(list(scores))
        np.testing.assert_array_equal(told, mean_task_ranks(list(rescaled)))
        informative = np.isfinite(scores).any(axis=1)
        if not informative.any():
            assert np.all(np.isnan(told))
            continue
        diverged = ~np.isfinite(scores[informative]).all(axis=0)
        assert np.array_equal(np.isnan(told), diverged)  # diverged on any task: NaN, the ES's worst
        finite = told[~diverged]
        assert np.all((finite >= -0.5) & (finite <= 0.5))
        if not diverged.any():
            assert np.isclose(told.sum(), 0.0)  # centred: every task's ranks sum to zero
        for t in np.flatnonzero(informative):  # within a task, a diverged member ranks below every finite one
            ranks = centered_ranks(scores[t])
            bad = ~np.isfinite(scores[t])
            if bad.any() and (~bad).any():
                assert ranks[bad].max() < ranks[~bad].min()


# ---------------------------------------------------------------------------------------------------------
# config


@pytest.mark.parametrize("overrides, message", [
    (["combine=ranks"], "unknown combine 'ranks'; did you mean 'rank'?"),
    (["combine=median"], "unknown combine 'median'"),
    (["combine=[rank]"], "config key combine must be a string, got ['rank']"),
    (["combine=3"], "config key combine must be a string, got 3"),
])
def test_combine_errors(overrides, message):
    with pytest.raises(UserError, match=re.escape(message)):
        parse_config(RANK, overrides)


def test_combine_reads_back_and_without_it_the_resolved_config_is_the_default_one():
    config = parse_config(RANK)
    assert config.combine == "rank" and config.to_dict()["combine"] == "rank"
    assert parse_config(config.to_dict()) == config
    # the default is written out in the resolved config, which equals that of a config without the key
    assert parse_config(recorder.config(combine="mean")).to_dict()["combine"] == "mean"
    assert parse_config(recorder.config(combine="mean")).to_yaml() == parse_config(recorder.CONFIG).to_yaml()


# ---------------------------------------------------------------------------------------------------------
# runs


@pytest.mark.heavy
@pytest.mark.slow  # 116 s on 2 cores
def test_without_combine_a_run_is_bit_identical_to_before(tmp_path):
    """tests/data/pre_task_ranks.json was written by tests/data/record_pre_task_ranks.py on main before this
    change (jax 0.10.2, CPU, 4 devices): the objective's meta-parameters and every number of metrics.jsonl;
    re-recorded after `final_return`'s fallback for windows with no episode, which changed the paired run on
    purpose, and with the meta-parameters' digest in place of the objective file's (the recorder says why)."""
    recorded = json.loads((DATA / "pre_task_ranks.json").read_text())
    now = (jax.__version__, jax.default_backend(), jax.device_count())
    if (recorded["jax"], recorded["backend"], recorded["devices"]) != now:
        pytest.skip(f"recorded with jax {recorded['jax']} on {recorded['backend']} x {recorded['devices']}")
    assert recorder.runs(tmp_path) == recorded["runs"]
    line = metrics(tmp_path / "paired")[0]  # the new keys are added to a multi-task run's lines
    assert list(line["task_fitness"]) == list(line["task_spread"]) == NAMES


@pytest.mark.slow  # 25 s on 2 cores
def test_the_es_is_told_the_mean_of_task_ranks_and_the_report_is_the_mean():
    step = GenerationStep(parse_config(RANK))
    baselines = measure_baselines(step.problem, {}, lambda message: None)
    state = step.init()
    es_state, out = step(state, 0, baselines)
    assert [t.name for t in out.tasks] == NAMES and len(out.scores) == 2
    np.testing.assert_array_equal(out.told, mean_task_ranks(out.scores))
    np.testing.assert_array_equal(out.fitness, paired.combine_tasks(out.scores, [out.baseline[n] for n in NAMES]))
    # the scores are the paired-normalised ones: 1 + (member - PPO) / ppo_gap
    for task, scores, returns in zip(out.tasks, out.scores, out.returns, strict=True):
        member = np.asarray(returns, np.float64).mean(axis=1)
        expected = 1 + (member - out.baseline[task.name]) / baselines.scales[task.name]
        np.testing.assert_allclose(scores, expected, rtol=1e-12)
    # the state after the step is the one `tell` gives for the ranks
    keys = step.keys(0)
    population, asked = step.ask(keys.ask, state)
    expected = step.tell(keys.tell, population, out.told, asked)
    for a, b in zip(jax.tree.leaves(hosts.to_host(es_state)), jax.tree.leaves(hosts.to_host(expected)), strict=True):
        np.testing.assert_array_equal(a, b)
    # without the key the ES is told the reported fitness itself
    mean_step = GenerationStep(parse_config(recorder.CONFIG))
    assert not mean_step.problem.ranked and mean_step.problem.to_tell(out.fitness, out.scores) is out.fitness


@pytest.fixture(scope="module")
def rank_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rank")
    return out, meta_train(RANK, out, progress=False, plot=False)


def test_a_rank_run_logs_what_each_task_contributed(rank_run):
    out, result = rank_run
    lines = metrics(out)
    assert len(lines) == 2 and result.generations_done == 2
    recorded = json.loads((DATA / "pre_task_ranks.json").read_text())["runs"]["paired"]["metrics"][0]
    for line in lines:
        assert list(line["task_fitness"]) == list(line["task_spread"]) == NAMES
        assert all(v is None or v >= 0 for v in line["task_spread"].values())
        # fitness_* stay the PPO-normalised mean over tasks (with every member finite: the mean of task means)
        means = [v for v in line["task_fitness"].values() if v is not None]
        if line["nan_count"] == 0 and means:
            assert line["fitness_mean"] == pytest.approx(np.mean(means), rel=1e-12)
    # generation 0 trains the same members as a run without the key, and reports the same numbers
    if jax.device_count() == 4:
        same = [k for k in recorded if k != "env_steps"]  # which counts the ES mean's evaluation here
        first = recorder.as_recorded(lines[0])
        assert {k: first.get(k) for k in same} == {k: recorded[k] for k in same}
    assert (out / "config.yaml").read_text().count("combine: rank") == 1
    assert json.loads((out / "summary.json").read_text())["combine"].startswith("rank")


def test_a_rank_run_resumes_byte_for_byte(rank_run, tmp_path):
    out, _ = rank_run
    meta_train({**RANK, "generations": 1}, tmp_path, progress=False, plot=False)
    meta_train(RANK, tmp_path, resume=True, progress=False, plot=False)
    assert (tmp_path / "objective.msgpack").read_bytes() == (out / "objective.msgpack").read_bytes()
    keys = (*recorder.KEYS, "task_fitness", "task_spread")
    assert [{k: x.get(k) for k in keys} for x in metrics(tmp_path)] == [{k: x.get(k) for k in keys}
                                                                        for x in metrics(out)]
