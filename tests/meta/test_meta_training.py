"""Meta-training: config and strategy errors, one generation of several evosax strategies, sharded == one
device, checkpoints, refusal to overwrite, damaged checkpoints, `--set generations=0`.

Every run is tiny (CartPole, 4 envs x 16 steps, 4 updates, a hidden-8 LPO drift, population 4) and shares one
compiled population evaluator per mesh (tasks._PROGRAMS).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jax
import numpy as np
import pytest
from tiny_meta import TINY, fitness_columns, read_metrics, tiny

from metadisco.core import checkpoint as ckpt_lib
from metadisco.core.errors import UserError
from metadisco.meta.baselines import Baselines
from metadisco.meta.load import parse_config
from metadisco.meta.loop import meta_train
from metadisco.meta.step import GenerationStep, fitness_stats
from metadisco.meta.strategy import make_strategy
from metadisco.objectives.files import load_objective
from metadisco.parallel import hosts
from metadisco.parallel.sharding import make_mesh

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"

# ---------------------------------------------------------------------------------------------------------
# config and strategy errors (no training)


def test_overrides_reach_nested_keys():
    config = parse_config(TINY, ["strategy.sigma_init=0.05", "tasks.0.timesteps=512", "tasks.0.train.num_envs=8",
                                 "held_out_envs=[Acrobot-v1, Pendulum-v1]", "strategy.settings.crossover_rate=0.5"])
    assert config.strategy.sigma_init == 0.05
    assert config.tasks[0].timesteps == 512 and config.tasks[0].train["num_envs"] == 8
    assert config.held_out_envs == ("Acrobot-v1", "Pendulum-v1")
    assert parse_config(config.to_dict()) == config  # the resolved config.yaml reads back the same


@pytest.mark.parametrize("overrides, message", [
    (["strategy.sigma=0.1"], "unknown config key under strategy 'sigma'"),
    (["tasks.0.timestep=5"], "unknown config key under tasks.0 'timestep'"),
    (["tasks.3.timesteps=5"], "tasks is a list of 1 entries"),
    (["generationz=3"], "unknown config key 'generationz'"),
    (["generations=two"], "generations must be an integer"),
    (["held_out_envs=[CartPole-v1]"], "both a task and held out"),
    (["fitness=best"], "unknown fitness 'best'"),
])
def test_config_errors(overrides, message):
    with pytest.raises(UserError, match=message):
        parse_config(TINY, overrides)


def test_missing_keys_are_errors():
    for key in ("tasks", "held_out_envs", "generations", "strategy"):
        data = copy.deepcopy(TINY)
        del data[key]
        with pytest.raises(UserError, match=f"missing the key {key}"):
            parse_config(data)
    data = copy.deepcopy(TINY)
    del data["strategy"]["population_size"]
    with pytest.raises(UserError, match="missing the key strategy.population_size"):
        parse_config(data)


@pytest.mark.parametrize("strategy, message", [
    ({"name": "OpenES"}, "unknown strategy 'OpenES'; did you mean 'Open_ES'"),
    ({"name": "SimpleGA", "settings": {"crossover": 0.5}}, "SimpleGA has no setting 'crossover'; its settings: "
                                                            "crossover_rate"),
    ({"name": "CMA_ES", "lr": 0.1}, "CMA_ES has no learning rate"),
    ({"name": "Open_ES", "fitness_shaping": "rank"}, "unknown fitness shaping 'rank'"),
    ({"name": "Open_ES", "population_size": 5}, "needs an even strategy.population_size"),
])
def test_strategy_errors(strategy, message):
    config = parse_config(tiny(strategy={"population_size": 4, **strategy}))
    with pytest.raises(UserError, match=message):
        make_strategy(config.strategy, {"w": np.zeros(3, np.float32)})


def test_open_es_is_antithetic_by_default():
    config = parse_config(TINY)
    strategy = make_strategy(config.strategy, {"w": np.zeros(3, np.float32)})
    population, _ = strategy.ask(jax.random.PRNGKey(0), strategy.init(jax.random.PRNGKey(1)))
    np.testing.assert_allclose(population["w"][:2], -population["w"][2:])


def test_indivisible_population_is_an_error():
    config = parse_config(tiny(strategy_population_size=6))
    with pytest.raises(UserError, match=r"population_size 6 does not divide by the 4 devices; use a multiple of 4 "
                                        r"\(e.g. 4 or 8\), or --devices 3"):
        GenerationStep(config)


# ---------------------------------------------------------------------------------------------------------
# runs


@pytest.mark.parametrize("name, extra", [
    ("Open_ES", {}),
    ("CMA_ES", {"lr": None}),
    ("SNES", {}),
    ("PGPE", {}),
    ("SimpleGA", {"lr": None}),
])
@pytest.mark.slow  # 21 s on 2 cores
def test_one_generation_of_each_strategy(tmp_path, name, extra):
    config = tiny(generations=1)
    config["strategy"] = {**config["strategy"], "name": name, **extra}
    result = meta_train(config, tmp_path, progress=False)
    (line,) = read_metrics(tmp_path)
    assert line["generation"] == 0 and line["nan_count"] == 0
    assert line["fitness_min"] <= line["fitness_mean"] <= line["fitness_max"]
    assert result.fitness_of_initial_mean > 0 and result.fitness_of_final_mean > 0
    objective, meta = load_objective(tmp_path / "objective.msgpack")
    assert objective.drift.name == "lpo"
    start = GenerationStep(parse_config(config)).strategy.start
    moved = sum(float(np.abs(np.asarray(a) - np.asarray(b)).sum()) for a, b in
                zip(jax.tree.leaves(meta), jax.tree.leaves(start), strict=True))
    assert moved > 0  # the strategy did update its mean (or best member) from the start point
    assert (tmp_path / "meta_curve.png").stat().st_size > 1000


def test_a_diverged_member_scores_worst_and_the_generation_goes_on():
    step = GenerationStep(parse_config(TINY))
    es_state = step.init(step.base_key)
    keys = step.keys(0)
    population, es_state = step.ask(keys.ask, es_state)
    # member 1's drift network is NaN, so its training diverges (the trainer itself survives huge finite
    # weights: gradient clipping and tanh saturation), the others' does not
    poisoned = jax.tree.map(lambda x: np.asarray(x).copy(), population)
    for leaf in jax.tree.leaves(poisoned):
        leaf[1] = np.nan
    # one task: fitness is not normalised (no baselines)
    fitness = step.problem.population_fitness(hosts.to_global(poisoned, step.mesh), keys.tasks,
                                              step.problem.tasks_of(0), Baselines()).fitness
    assert np.isnan(fitness[1]) and np.all(np.isfinite(np.delete(fitness, 1)))
    assert fitness_stats(fitness)["nan_count"] == 1
    # the strategy is told that fitness for the members it asked for, and its mean stays finite
    es_state = step.tell(keys.tell, population, fitness, es_state)
    assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree.leaves(step.solution(es_state)))


@pytest.mark.parametrize("name, extra", [("Open_ES", {"fitness_shaping": "identity", "optimizer": "sgd"}),
                                         ("CMA_ES", {"lr": None}), ("SNES", {}), ("PGPE", {}),
                                         ("SimpleGA", {"lr": None})])
def test_every_strategy_survives_diverged_members(name, extra):
    config = parse_config(tiny(strategy={**TINY["strategy"], "name": name, **extra}))
    strategy = make_strategy(config.strategy, {"w": np.zeros(5, np.float32)})
    state = strategy.init(jax.random.PRNGKey(0))
    from metadisco.meta.fitness import to_minimise

    for g in range(3):
        population, state = strategy.ask(jax.random.PRNGKey(2 * g + 1), state)
        fitness = np.array([1.0, np.nan, 3.0, -np.inf][: config.strategy.population_size], np.float32)
        state = strategy.tell(jax.random.PRNGKey(2 * g + 2), population, to_minimise(fitness), state)
    assert np.all(np.isfinite(np.asarray(strategy.solution(state)["w"])))


@pytest.mark.heavy
@pytest.mark.slow  # 71 s on 2 cores
def test_several_tasks_are_normalised_by_a_measured_ppo_baseline(tmp_path):
    acrobot = {**TINY["tasks"][0], "env": "Acrobot-v1", "timesteps": 4096}  # its episodes last up to 500 steps
    config = tiny(tasks=[TINY["tasks"][0], acrobot], held_out_envs=["Pendulum-v1"], generations=1, baseline_seeds=2,
                  fitness="mean_return")
    result = meta_train(config, tmp_path, progress=False)
    baselines = json.loads((tmp_path / "baselines.json").read_text())
    assert set(baselines) == {"CartPole-v1", "Acrobot-v1"}
    assert baselines["CartPole-v1"] > 0 > baselines["Acrobot-v1"]  # Acrobot's returns are negative
    (line,) = read_metrics(tmp_path)
    expected = np.mean([line["returns"]["CartPole-v1"] / baselines["CartPole-v1"],
                        line["returns"]["Acrobot-v1"] / abs(baselines["Acrobot-v1"])])
    np.testing.assert_allclose(line["fitness_mean"], expected, rtol=1e-6)
    assert result.fitness_of_final_mean is not None


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """Three generations on the 4-device mesh, checkpointed every generation."""
    out = tmp_path_factory.mktemp("reference")
    meta_train(tiny(generations=3, eval_every=2), out, progress=False)
    return out


def test_run_directory_contents(reference_run):
    lines = read_metrics(reference_run)
    assert [x["generation"] for x in lines] == [0, 1, 2]
    assert lines[0]["fitness_of_initial_mean"] is not None
    assert "fitness_of_mean" not in lines[0] and lines[1]["fitness_of_mean"] is not None  # eval_every 2 and last
    assert lines[2]["env_steps"] > lines[0]["env_steps"] > 0
    assert parse_config(__import__("yaml").safe_load((reference_run / "config.yaml").read_text())).generations == 3
    assert [p.name for p in ckpt_lib.list_checkpoints(reference_run / "checkpoints")] == [
        "gen_000002.msgpack", "gen_000003.msgpack"]


@pytest.mark.heavy
@pytest.mark.slow  # 24 s on 2 cores
def test_sharded_equals_one_device(reference_run, tmp_path):
    meta_train(tiny(generations=3, eval_every=2), tmp_path, mesh=make_mesh(jax.devices()[:1]), progress=False)
    assert fitness_columns(read_metrics(tmp_path)) == fitness_columns(read_metrics(reference_run))
    assert (tmp_path / "objective.msgpack").read_bytes() == (reference_run / "objective.msgpack").read_bytes()


def test_resume_from_an_older_checkpoint_is_exact(reference_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    (run / "checkpoints" / "gen_000003.msgpack").unlink()  # as if killed before the last checkpoint
    (run / "objective.msgpack").write_bytes(b"half-written")
    meta_train(tiny(generations=3, eval_every=2), run, resume=True, progress=False)
    assert (run / "objective.msgpack").read_bytes() == (reference_run / "objective.msgpack").read_bytes()
    assert (run / "metrics.jsonl").read_text().count("\n") == 3
    assert fitness_columns(read_metrics(run)) == fitness_columns(read_metrics(reference_run))


def test_existing_directory_without_resume_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="is not empty; pass resume"):
        meta_train(tiny(), tmp_path, progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_damaged_checkpoint_is_a_clear_error(reference_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    path = run / "checkpoints" / "gen_000003.msgpack"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="damaged checkpoint .*gen_000003.msgpack"):
        meta_train(tiny(generations=3, eval_every=2), run, resume=True, progress=False)
    path.write_bytes(b"\x00\x01garbage")
    with pytest.raises(UserError, match="damaged checkpoint"):
        meta_train(tiny(generations=3, eval_every=2), run, resume=True, progress=False)


def test_cli_generations_zero_writes_the_initial_objective(tmp_path, capsys):
    import yaml

    from metadisco.cli import main

    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "run"
    assert main(["meta-train", str(config_path), "--set", "generations=0", "--out", str(out)]) == 0
    objective, meta = load_objective(out / "objective.msgpack")
    start = GenerationStep(parse_config(TINY)).strategy.start
    jax.tree.map(np.testing.assert_array_equal, meta, jax.tree.map(np.asarray, start))
    assert yaml.safe_load((out / "config.yaml").read_text())["held_out_envs"] == ["Acrobot-v1"]
    assert ckpt_lib.list_checkpoints(out / "checkpoints")
    # user mistakes: one line, status 2
    assert main(["meta-train", str(config_path), "--set", "strategy.sigmaa=1", "--out", str(tmp_path / "x")]) == 2
    assert main(["meta-train", str(config_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown config key under strategy 'sigmaa'" in err and "is not empty; pass --resume" in err
    assert "not shown by this run: transfer" in err and "held-out envs (Acrobot-v1) are untested" in err


def _command_of(path) -> str:
    """The command an experiment config is for, read off the usage line every config opens with."""
    found = re.search(r"metadisco ([a-z-]+) experiments/" + re.escape(path.name), path.read_text())
    assert found, f"{path.name} does not say which command runs it ('#   metadisco COMMAND experiments/...')"
    return found.group(1)


@pytest.mark.parametrize("path", sorted(EXPERIMENTS.glob("*.yaml")), ids=lambda p: p.stem)
def test_experiment_configs_are_valid(path):
    from metadisco.core.io import read_yaml
    from metadisco.core.schema import from_plain
    from metadisco.meta.load import load_config
    from metadisco.objectives import Objective
    from metadisco.search.pbt.config import PBTConfig
    from metadisco.search.sweep import SweepConfig

    command = _command_of(path)
    if command in ("sweep", "pbt"):  # every value checked, the space against the trainer config
        from_plain(SweepConfig if command == "sweep" else PBTConfig, read_yaml(path)).resolve()
        return
    assert command in ("meta-train", "probe")
    config = load_config(path)  # known keys, known env ids, held-out envs apart from the tasks
    assert config.held_out_envs and config.generations > 0
    objective = config.objective  # read into an Objective once, with the config
    assert isinstance(objective, Objective) and Objective.from_spec(objective.to_spec()) == objective
    make_strategy(config.strategy, objective.zero_meta())  # the strategy accepts its settings


# ---------------------------------------------------------------------------------------------------------
# the device count in the run directory


def test_device_count_is_recorded(reference_run):
    note = json.loads((reference_run / hosts.DEVICES_FILE).read_text())
    assert note["devices"] == 4 and note["processes"] == 1 and note["platform"] == "cpu"
    assert json.loads((reference_run / "summary.json").read_text())["devices"] == 4


def test_resume_on_another_device_count_warns_and_continues(reference_run, tmp_path):
    import shutil

    from metadisco.core.errors import MetadiscoWarning

    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    (run / "checkpoints" / "gen_000003.msgpack").unlink()  # one generation left to do
    one_device = make_mesh(jax.devices()[:1])
    with pytest.warns(MetadiscoWarning, match="run on 4 device.* resumes on 1: .* not guaranteed to be bit-identical"):
        meta_train(tiny(generations=3, eval_every=2), run, resume=True, mesh=one_device, progress=False)
    assert [x["generation"] for x in read_metrics(run)] == [0, 1, 2]
    assert json.loads((run / hosts.DEVICES_FILE).read_text())["devices"] == 1  # the count it ends on


# ---------------------------------------------------------------------------------------------------------
# the generation step as a library call, and what the core imports


def test_a_users_own_loop_over_the_generation_step_matches_meta_train():
    from metadisco.meta.baselines import measure_baselines

    config = parse_config(TINY)
    step = GenerationStep(config)
    baselines = measure_baselines(step.problem)
    state = step.init()
    for g in range(config.generations):
        state, out = step(state, g, baselines)
        assert out.generation == g and out.fitness.shape == (4,) and [t.name for t in out.tasks]
    result = meta_train(TINY, None, progress=False)
    jax.tree.map(np.testing.assert_array_equal, step.solution(state), result.mean)
    assert len(result.timing.generation) == config.generations


def test_callbacks_see_every_generation(tmp_path):
    seen = []

    class Recorder:
        def on_start(self, start, generations):
            seen.append(("start", start, generations))

        def on_generation(self, line, seconds):
            seen.append(("generation", line["generation"], seconds.generation >= seconds.train))

        def on_end(self, result, run_dir):
            seen.append(("end", result.generations_done, run_dir.path == tmp_path))

    meta_train(TINY, tmp_path, progress=False, callbacks=[Recorder()], plot=False)
    assert seen == [("start", 0, 2), ("generation", 0, True), ("generation", 1, True), ("end", 2, True)]
    assert not (tmp_path / "meta_curve.png").exists()  # plot=False: no figure, no matplotlib


def test_the_training_path_imports_no_matplotlib():
    import subprocess
    import sys

    code = ("import sys, metadisco.trainers.ppo, metadisco.runs.seeds, metadisco.meta.loop, metadisco.cli; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib was imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
