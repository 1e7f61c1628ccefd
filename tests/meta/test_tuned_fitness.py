"""Tuned fitness (`fitness: {score, tune: {lr: [...]}}`, `metadisco.meta.tuning`): the grid is one call of the
population program equal to each point trained alone, a member scores at its best point and PPO's control at its
own, the chosen points are in metrics.jsonl, a tuned run resumes bit for bit and its plan counts the grid, and a
bad grid is a one-line error before anything compiles.

Every run is the tiny CartPole config of tests/tiny_meta.py (population 4) with a 3-point learning-rate grid.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import yaml
from tiny_meta import TINY, read_metrics, tiny

from metadisco.cli import main
from metadisco.core.errors import UserError
from metadisco.meta import paired
from metadisco.meta.baselines import measure_baselines
from metadisco.meta.load import parse_config
from metadisco.meta.loop import meta_train
from metadisco.meta.problem import member_fitness
from metadisco.meta.step import GenerationStep
from metadisco.meta.tuning import Grid, best_of
from metadisco.parallel import hosts

LRS = [0.003, 0.01, 0.03]
TUNED = {"score": "final_return", "tune": {"lr": LRS}}


def _columns(lines):
    """Every field of metrics lines but wall-clock times."""
    return [{k: v for k, v in line.items() if "seconds" not in k} for line in lines]


# ---------------------------------------------------------------------------------------------------------
# the rule (no training)


def test_best_of_is_the_first_largest_finite_point_for_random_inputs():
    rng = np.random.default_rng(0)
    for _ in range(200):
        values = rng.normal(size=(int(rng.integers(1, 6)), int(rng.integers(1, 5))))
        values[rng.random(values.shape) < 0.3] = rng.choice([np.nan, np.inf, -np.inf])
        values[rng.random(values.shape) < 0.2] = 0.5  # ties
        best, chosen = best_of(values)
        for row, b, c in zip(values, best, chosen, strict=True):
            finite = np.isfinite(row)
            if not finite.any():
                assert np.isnan(b) and c == -1
                continue
            assert b == np.max(row[finite]) and row[c] == b
            assert c == np.flatnonzero(finite & (row == b))[0]  # the first of tied points


def test_best_of_keeps_the_precision_of_its_input():
    best, _ = best_of(np.asarray([[1.0, np.nan], [np.nan, np.nan]], np.float32))
    assert best.dtype == np.float32


def test_grid_is_the_product_and_labels_its_points():
    grid = Grid.of({"lr": (1e-3, 1e-2), "gamma": (0.9, 0.99)})
    assert grid.size == 4 and grid.points[1] == {"lr": 1e-3, "gamma": 0.99}
    assert grid.labels() == ["lr=0.001,gamma=0.9", "lr=0.001,gamma=0.99", "lr=0.01,gamma=0.9", "lr=0.01,gamma=0.99"]
    assert grid.histogram([0, 0, 3, -1]) == {**dict.fromkeys(grid.labels(), 0), "lr=0.001,gamma=0.9": 2,
                                             "lr=0.01,gamma=0.99": 1, "none": 1}
    assert Grid().size == 1 and not Grid()


def test_untuned_fitness_writes_back_as_before_and_a_tuned_one_reads_back():
    assert parse_config(TINY).to_dict()["fitness"] == "final_return"  # so old runs' config digests are unchanged
    config = parse_config(tiny(fitness=TUNED))
    assert config.fitness.score == "final_return" and dict(config.fitness.tune) == {"lr": tuple(LRS)}
    assert config.to_dict()["fitness"] == TUNED
    assert parse_config(config.to_dict()) == config


@pytest.mark.parametrize("changes, message", [
    ({"fitness": {"score": "final_return", "tune": {}}}, "config key fitness.tune is empty"),
    ({"fitness": {"score": "final_return", "tune": {"lr": []}}}, "tuning grid of 'lr' is empty"),
    ({"fitness": {"score": "final_return", "tune": {"lr": [0.01, 0.01]}}}, "repeats a value"),
    ({"fitness": {"score": "final_return", "tune": {"lr": [0.01, ".nan"]}}}, "fitness.tune.lr"),
    ({"fitness": {"score": "final_return", "tune": {"num_envs": [4, 8]}}}, "num_envs fixes the shape"),
    ({"fitness": {"score": "final_return", "tune": {"lrr": [0.01]}}}, "unknown .*hyperparameter 'lrr'"),
    ({"fitness": {"score": "final_return", "tune": {"lr": [0.01, -1.0]}}}, "fitness.tune on tasks.0 .*lr"),
    ({"fitness": {"score": "final_return", "tune": {"gamma": [0.9, 1.5]}}}, "fitness.tune on tasks.0 .*gamma"),
    ({"fitness": {"score": "best", "tune": {"lr": [0.01]}}}, "unknown fitness 'best'"),
    ({"fitness": {"scor": "final_return"}}, "unknown config key under fitness 'scor'"),
    ({"fitness": ["final_return"]}, "config key fitness must be a score's name"),
    ({"fitness": TUNED, "sampling": {"scale": {"lr": [0.5, 2.0]}}}, "lr is also drawn by sampling.scale"),
    ({"fitness": TUNED, "hyper": {"lr": {"scale": "log"}}}, "lr is also evolved by hyper"),
])
def test_a_bad_grid_is_a_one_line_error(changes, message):
    with pytest.raises(UserError, match=message) as info:
        parse_config(tiny(**changes))
    assert "\n" not in str(info.value)


def test_the_command_line_says_a_bad_grid_with_status_2(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(tiny(fitness={"score": "final_return", "tune": {"num_envs": [4, 8]}})))
    assert main(["meta-train", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "num_envs fixes the shape" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------------------
# training


@pytest.fixture(scope="module")
def paired_step():
    return GenerationStep(parse_config(tiny(fitness=TUNED, normalise="paired", generations=3, eval_every=2,
                                            checkpoint_every=1)))


@pytest.mark.heavy
@pytest.mark.slow  # 48 s on 2 cores
def test_the_grid_is_one_call_equal_to_each_point_alone(paired_step):
    """Row (r, g) of the grid's one call trains row r at point g: the same returns as the untuned program called
    at that point (its own compiled program, P rows), bit for bit; a member's fitness is its best point's and
    PPO's control is scored at its own best point."""
    step, problem = paired_step, paired_step.problem
    task = problem.tasks[0]
    keys = step.keys(0)
    population = step.ask(keys.ask, step.init())[0]
    rows = hosts.to_global(paired.with_control(hosts.to_host(population), problem.control, step.devices), step.mesh)
    seed_rows = paired.rows_of(keys.tasks[0][0], paired.count(rows))
    grid = problem.train_grid(task, rows, seed_rows)  # [rows, G, S]
    assert grid.shape == (paired.count(rows), len(LRS), task.cfg.seeds)
    for g in range(len(LRS)):
        alone = problem.train_rows(problem.grid.task_at(task, g), rows, seed_rows)
        np.testing.assert_array_equal(grid[:, g], alone)
    assert len({grid[:, g].tobytes() for g in range(len(LRS))}) == len(LRS)  # the points differ

    baselines = measure_baselines(problem)
    scored = problem.evaluate(population, 0, baselines)
    P = step.population_size
    means = member_fitness(grid)
    np.testing.assert_array_equal(scored.chosen[0], np.argmax(means[:P], axis=1))
    assert scored.baseline_chosen[task.name] == int(np.argmax(means[P]))
    expected = 1 + (means[:P].max(axis=1) - means[P].max()) / baselines.scales[task.name]
    np.testing.assert_allclose(scored.fitness, expected, rtol=1e-12)


@pytest.mark.slow  # 27 s on 2 cores
def test_a_tuned_run_records_its_points_and_resumes_bit_for_bit(tmp_path):
    config = tiny(fitness=TUNED, normalise="paired", generations=3, eval_every=2, checkpoint_every=1)
    run = tmp_path / "run"
    meta_train(config, run, progress=False, plot=False)
    lines = read_metrics(run)
    labels = [f"lr={lr:g}" for lr in LRS]
    for line in lines:
        (entry,) = line["tuned"].values()
        assert len(entry["chosen"]) == 4 and set(entry["chosen"]) <= {0, 1, 2}
        assert sum(entry["histogram"].values()) == 4 and list(entry["histogram"]) == labels
        assert entry["baseline"] in labels
    scored = [line for line in lines if "fitness_of_mean" in line]
    assert [line["generation"] for line in scored] == [1, 2]
    assert all(set(line["tuned_mean"]["CartPole-v1@256"]) == {"point", "baseline"} for line in scored)
    assert "fitness_tune" in json.loads((run / "summary.json").read_text())

    resumed = tmp_path / "resumed"
    shutil.copytree(run, resumed)
    (resumed / "checkpoints" / "gen_000003.msgpack").unlink()
    (resumed / "checkpoints" / "gen_000002.msgpack").unlink()
    meta_train(config, resumed, resume=True, progress=False, plot=False)
    assert _columns(read_metrics(resumed)) == _columns(lines)
    assert (resumed / "objective.msgpack").read_bytes() == (run / "objective.msgpack").read_bytes()


@pytest.mark.heavy
@pytest.mark.slow  # 49 s on 2 cores
def test_an_unpaired_tuned_run_scores_each_member_at_its_best_point(tmp_path):
    config = tiny(fitness=TUNED, generations=1)
    step = GenerationStep(parse_config(config))
    problem = step.problem
    keys = step.keys(0)
    population = step.ask(keys.ask, step.init())[0]
    grid = problem.train_grid(problem.tasks[0], population, keys.tasks[0])
    scored = problem.evaluate(population, 0, measure_baselines(problem))
    np.testing.assert_array_equal(scored.fitness, member_fitness(grid).max(axis=1))
    np.testing.assert_array_equal(scored.returns[0], grid[np.arange(4), scored.chosen[0]])
    result = meta_train(config, tmp_path / "run", progress=False, plot=False)
    (line,) = read_metrics(tmp_path / "run")
    assert line["fitness_mean"] == pytest.approx(float(np.mean(scored.fitness)))
    assert line["env_steps"] == 4 * len(LRS) * 256 + 4 * len(LRS) * 256  # the population and the mean, each x G
    assert result.fitness_of_final_mean is not None


@pytest.mark.slow
def test_the_plan_counts_the_grid(tmp_path, monkeypatch):
    from metadisco.meta.plan import plan
    from metadisco.parallel import cost

    config = tiny(fitness=TUNED, normalise="paired", generations=3, eval_every=2)
    monkeypatch.setattr(cost, "jaxpr_cost", lambda closed, compiled=None: cost.Cost())
    step = GenerationStep(parse_config(config))
    result = plan(step)
    (program,) = result.programs
    assert program.rows == len(LRS) * step.problem.population_rows()  # (members, PPO, padding) x G
    meta_train(config, tmp_path, progress=False, plot=False)
    steps = [line["env_steps"] for line in read_metrics(tmp_path)]
    assert [g.env_steps for g in result.generations] == np.diff([0, *steps]).tolist()


def test_the_probe_says_it_cannot_probe_a_best_of_grid_fitness():
    from metadisco.meta.probe import probe

    with pytest.raises(UserError, match="probe at one grid point instead: --set fitness=final_return"):
        probe(GenerationStep(parse_config(tiny(fitness=TUNED))))


@pytest.mark.slow  # 23 s on 2 cores
def test_the_bench_times_a_tuned_generation_against_its_untuned_twin(tmp_path):
    tuned, untuned = tmp_path / "tuned.yaml", tmp_path / "untuned.yaml"
    tuned.write_text(yaml.safe_dump(tiny(fitness=TUNED)))
    untuned.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "bench.json"
    assert main(["bench", "--meta", "--recipes", str(untuned), "--tuned", "--out", str(out)]) == 2
    assert main(["bench", "--meta", "--recipes", str(tuned), "--tuned", "--repeats", "2", "--out", str(out)]) == 0
    (figure,) = json.loads(out.read_text())["tuned_generations"].values()
    assert figure["grid_size"] == 3 and [len(s) for s in figure["seconds"].values()] == [2, 2]
    assert figure["tuned_over_untuned"] == figure["median_tuned"] / figure["median_untuned"] > 0
