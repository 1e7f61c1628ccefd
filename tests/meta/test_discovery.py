"""Discovery that generalises: per-generation task and lifetime sampling, paired PPO-normalised fitness,
meta-validation with a kept best objective, the fitness-noise probe, and per-env evaluation budgets.

Every run is tiny (4 envs x 16 steps, hidden-8 nets, population 4 over the 4 test devices) and the runs share
compiled programs through `metadisco.meta.tasks._PROGRAMS` (so the tasks differ in their seed counts here, as the
probe's test needs, rather than there being a config of its own).
"""

from __future__ import annotations

import copy
import json
import math

import jax
import numpy as np
import pytest

from metadisco.core.errors import UserError
from metadisco.meta import paired
from metadisco.meta.baselines import Baselines, measure_random
from metadisco.meta.fitness import ppo_gap, ppo_normalised
from metadisco.meta.horizon import horizon_note, outside_training_horizons
from metadisco.meta.load import parse_config
from metadisco.meta.loop import meta_train
from metadisco.meta.probe import _combine, _pair_stats, probe
from metadisco.meta.step import GenerationStep
from metadisco.objectives.files import load_objective
from metadisco.parallel import hosts
from metadisco.parallel.sharding import make_mesh
from metadisco.runs import baseline_cache

TRAIN = {"num_envs": 4, "num_steps": 16, "hidden_sizes": [8, 8], "num_minibatches": 2, "update_epochs": 2,
         "lr": 0.01}
DISCOVER = {
    "objective": {"drift": {"kind": "talpo", "hidden": 8}},
    "tasks": [{"env": "CartPole-v1", "timesteps": [256, 512], "seeds": 2, "train": TRAIN},
              {"env": "UmbrellaChain-bsuite", "timesteps": 512, "seeds": 4, "train": TRAIN}],
    "sampling": {"tasks_per_generation": 1, "scale": {"lr": [0.5, 2.0]}},
    "normalise": "paired",
    "validation": {"tasks": [{"env": "Catch-bsuite", "timesteps": 512, "seeds": 4, "train": TRAIN}], "every": 1},
    "strategy": {"name": "Open_ES", "population_size": 4, "sigma_init": 0.5, "lr": 0.1},
    "generations": 4,
    "eval_every": 2,
    "held_out_envs": ["Acrobot-v1", "Breakout-MinAtar@500000"],
}


def discover(**changes) -> dict:
    config = copy.deepcopy(DISCOVER)
    config.update(changes)
    return config


def metrics(out) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("discover")
    return out, meta_train(discover(), out, progress=False)


# ---------------------------------------------------------------------------------------------------------
# config


@pytest.mark.parametrize("overrides, message", [
    (["validation.tasks.0.env=Acrobot-v1"], "both a validation env and held out"),
    (["validation.tasks.0.env=CartPole-v1"], "both a task and a validation env"),
    (["held_out_envs=[UmbrellaChain-bsuite@1000]"], "both a task and held out"),
    (["held_out_envs=[Acrobot-v1@ten]"], "budget after '@' must be a positive whole number"),
    (["held_out_envs=[Acrobot-v1@100]"], r"held_out_envs.0 \(Acrobot-v1@100\): timesteps 100 is smaller than one"),
    (["sampling.tasks_per_generation=3"], "must be in 0..2"),
    (["sampling.scale={lr: [0, 2]}"], r"sampling.scale.lr must be finite factors with 0 < lo <= hi"),
    (["sampling.scale={lr: [2, 1]}"], r"0 < lo <= hi, got \[2.0, 1.0\]"),
    (["sampling.scale={lr: 2}"], r"sampling.scale.lr must be a range \[lo, hi\]"),
    (["sampling.scale={num_envs: [1, 2]}"], r"sampling.scale on tasks.0 \(CartPole-v1\): num_envs fixes the shape"),
    (["sampling.scale={lrr: [1, 2]}"],
     r"unknown sampling.scale on tasks.0 \(CartPole-v1\): hyperparameter 'lrr'; did you mean 'lr'"),
    (["sampling.scale={gamma: [1, 1.5]}"], r"sampling.scale on tasks.0 \(CartPole-v1\): gamma"),
    (["normalise=ppo"], "unknown normalise 'ppo'"),
    (["normalise=fixed"], "validation needs normalise: paired"),
    (["tasks.0.timesteps=[256, 256]"], "with repeats"),
    (["tasks.0.timesteps=[256, -1]"], "timesteps and seeds must be positive"),
])
def test_discovery_config_errors(overrides, message):
    with pytest.raises(UserError, match=message):
        parse_config(DISCOVER, overrides)


def test_lifetimes_read_back_and_configs_without_the_newer_sections_take_their_defaults():
    config = parse_config(DISCOVER)
    assert config.tasks[0].lifetimes == (256, 512) and config.tasks[1].lifetimes == (512,)
    assert parse_config(config.to_dict()) == config
    plain = parse_config({k: v for k, v in DISCOVER.items() if k not in ("sampling", "normalise", "validation")})
    # the resolved form holds every section, at its default where the config had none (an older run directory's
    # config.yaml, written without them, still resumes: tests/meta/test_config_schema.py)
    assert {"sampling", "normalise", "validation"} <= set(plain.to_dict())
    assert parse_config(plain.to_dict()) == plain and plain.normalise == "fixed"
    assert parse_config(DISCOVER, ["sampling.scale={}"]).to_dict()["sampling"]["tasks_per_generation"] == 1
    assert parse_config(DISCOVER).to_dict()["sampling"]["scale"] == {"lr": [0.5, 2.0]}


def test_horizon_note_names_the_evaluation_envs_whose_run_length_training_never_showed():
    # training N: CartPole 256 / 64 = 4 and 512 / 64 = 8, UmbrellaChain 8; validation Catch 8 (inside);
    # held out at their family's preset: Acrobot 500000 // 512 = 976, Breakout 500000 // 8192 = 61
    config = parse_config(DISCOVER)
    assert outside_training_horizons(config) == ((4, 8), [("Acrobot-v1", 976), ("Breakout-MinAtar@500000", 61)])
    note = horizon_note(config)
    assert note.startswith("note: ") and "4-8" in note and "Acrobot-v1 (N = 976)" in note and "\n" not in note
    assert "Catch-bsuite" not in note
    # the progress n / N alone is in [0, 1] on every env: nothing to note
    assert horizon_note(parse_config(DISCOVER, ["objective.drift.horizon=false"])) is None
    assert horizon_note(parse_config(discover(objective={"drift": {"kind": "lpo", "hidden": 8}}))) is None
    # a validation env past the range is named too; every env inside it: no note
    longer = parse_config(DISCOVER, ["validation.tasks.0.timesteps=1024", "held_out_envs=[]"])
    assert outside_training_horizons(longer)[1] == [("Catch-bsuite@1024", 16)]
    assert horizon_note(parse_config(DISCOVER, ["held_out_envs=[]"])) is None


# ---------------------------------------------------------------------------------------------------------
# sampling


def test_task_sampling_is_a_function_of_seed_and_generation():
    a = GenerationStep(parse_config(discover(generations=0)))
    b = GenerationStep(parse_config(discover(generations=0)))
    draws = [[t.name for t in a.problem.tasks_of(g)] for g in range(40)]
    assert draws == [[t.name for t in b.problem.tasks_of(g)] for g in range(40)]
    assert all(len(d) == 1 for d in draws)  # tasks_per_generation: 1
    # every task and every length is drawn, in some generations and not others
    assert {d[0] for d in draws} == {"CartPole-v1@256", "CartPole-v1@512", "UmbrellaChain-bsuite@512"}
    c = GenerationStep(parse_config(discover(generations=0, seed=1)))
    assert draws != [[t.name for t in c.problem.tasks_of(g)] for g in range(40)]
    # a task's seed keys do not depend on which length it is drawn at
    keys = [a.keys(g).tasks[0] for g in range(3)]
    assert keys[0].shape == (4, 2, 2) and not np.array_equal(keys[0], keys[1])


def test_drawn_settings_are_log_uniform_in_range_per_seed_generation_and_task():
    a = GenerationStep(parse_config(discover(generations=0)))
    b = GenerationStep(parse_config(discover(generations=0)))
    own = {t.name: t.train_config.lr for t in a.problem.tasks}
    drawn = [(t.name, t.train_config.lr / own[t.name]) for g in range(200) for t in a.problem.tasks_of(g)]
    assert drawn == [(t.name, t.train_config.lr / own[t.name]) for g in range(200) for t in b.problem.tasks_of(g)]
    factors = np.asarray([f for _, f in drawn])
    assert np.all((factors >= 0.5 * (1 - 1e-6)) & (factors <= 2.0 * (1 + 1e-6)))
    # log-uniform on [log 0.5, log 2]: the log factor's mean is 0 and its quartiles are at -+0.347, to within
    # the error of 200 draws
    logs = np.log(factors)
    assert abs(logs.mean()) < 0.12 and abs(np.quantile(logs, 0.25) + 0.347) < 0.12
    assert abs(np.quantile(logs, 0.75) - 0.347) < 0.12
    assert len(set(factors.round(6))) == len(factors)  # a fresh draw every generation
    # a task's draw depends on the generation and the task, not on the length it is drawn at nor on which other
    # tasks the generation drew
    every = GenerationStep(parse_config(discover(generations=0, sampling={"tasks_per_generation": 0,
                                                                         "scale": {"lr": [0.5, 2.0]}})))
    for g in range(30):
        mine = {t.index: t.train_config.lr / own[t.name] for t in a.problem.tasks_of(g)}
        all_tasks = {t.index: t.train_config.lr / own[t.name] for t in every.problem.tasks_of(g)}
        assert all(all_tasks[i] == f for i, f in mine.items())
    # the drawn settings are traced: one compiled program serves every draw
    drawn_tasks = [t for g in range(10) for t in a.problem.tasks_of(g)]
    assert {id(t.population_program) for t in drawn_tasks} <= {id(t.population_program) for t in a.problem.tasks}
    # the hypers every row of the generation trains with carry the drawn value
    t = a.problem.tasks_of(3)[0]
    assert np.all(np.asarray(t.hypers(5).lr) == np.float32(t.train_config.lr))
    c = GenerationStep(parse_config(discover(generations=0, seed=1)))
    assert [f for _, f in drawn[:20]] != [t.train_config.lr / own[t.name] for g in range(20)
                                          for t in c.problem.tasks_of(g)]


def test_no_sampling_trains_every_task_every_generation():
    config = parse_config(discover(sampling={"tasks_per_generation": 0},
                                   tasks=[{**DISCOVER["tasks"][0], "timesteps": 256}, DISCOVER["tasks"][1]]))
    step = GenerationStep(config)
    assert [t.name for t in step.problem.tasks_of(7)] == ["CartPole-v1@256", "UmbrellaChain-bsuite@512"]


# ---------------------------------------------------------------------------------------------------------
# paired fitness


def test_ppo_normalised_invariants():
    rng = np.random.default_rng(0)
    for _ in range(500):
        ppo, random = rng.normal(0, 100, 2)
        score = rng.normal(0, 100, 7)
        norm = ppo_normalised(score, ppo, random)
        assert ppo_normalised(ppo, ppo, random) == 1.0 or ppo - random < ppo_gap(ppo, random)
        assert np.all(np.diff(norm[np.argsort(score)]) >= 0)  # order-preserving, negative returns included
        assert ppo_gap(ppo, random) > 0
        np.testing.assert_allclose(paired.relative(score, ppo, ppo_gap(ppo, random)),
                                   1 + (score - ppo) / ppo_gap(ppo, random))


@pytest.mark.heavy
@pytest.mark.slow  # 165 s on 2 cores
def test_paired_fitness_of_ppo_itself_is_exactly_one(full_run):
    step = GenerationStep(parse_config(discover()))
    # any scale: PPO's own score is 1 + 0 / scale
    baselines = Baselines(random=measure_random(step.problem), scales={t.name: 1.7 for t in step.problem.tasks},
                          paired=True)
    es_state = step.init(step.base_key)
    keys = step.keys(0)
    population, _ = step.ask(keys.ask, es_state)
    population = jax.tree.map(lambda x: np.asarray(x).copy(), hosts.to_host(population))
    for leaf, zero in zip(jax.tree.leaves(population), jax.tree.leaves(step.problem.control), strict=True):
        leaf[2] = zero  # member 2 is PPO exactly (every learned piece at zero)
    fitness = step.problem.population_fitness(hosts.to_global(population, step.mesh), keys.tasks,
                                              step.problem.tasks_of(0), baselines).fitness
    assert fitness[2] == 1.0
    assert np.all(np.isfinite(fitness)) and not np.all(fitness == 1.0)


@pytest.mark.heavy
@pytest.mark.slow  # 88 s on 2 cores
def test_the_mean_scored_alone_gets_the_paired_calls_bits_and_ppo_trains_once():
    """With PPO's side measured once per run, the ES mean's evaluation trains the mean alone (4 rows instead of
    6 on 2 devices), and every figure is bit for bit what the paired call of (mean, PPO) pairs gives."""
    config = discover(tasks=[{"env": "CartPole-v1", "timesteps": 256, "seeds": 2, "train": TRAIN}],
                      sampling={"tasks_per_generation": 0}, validation={"tasks": []})
    config.pop("validation")
    step = GenerationStep(parse_config(config), mesh=make_mesh(jax.devices()[:2]))
    problem, (task,) = step.problem, step.problem.tasks
    assert problem.population_rows() == 6 and problem.mean_rows(0) == 4
    baselines = Baselines(random={"CartPole-v1": 20.0}, scales={task.name: 7.0}, paired=True)
    population = hosts.to_host(step.ask(step.keys(0).ask, step.init(step.base_key))[0])
    calls = []
    train_rows, point_returns = problem.train_rows, problem._point_returns
    problem._point_returns = lambda point, task, keys, rows, mesh=None: (
        calls.append(rows) or point_returns(point, task, keys, rows, mesh))
    for m in range(2):  # two different points, as two evaluations of a run
        point = jax.tree.map(lambda x, m=m: x[m], population)
        keys = problem.fresh_keys(task)
        rows, n = paired.pairs(point, problem.control, keys.shape[0], 2, problem.population_rows())
        out = train_rows(task, hosts.to_global(rows, problem.mesh), paired.pair_keys(keys, n))
        mine, ppo = paired.run_mean(out[:3]), paired.run_mean(out[3:6])
        expected = float(paired.relative(np.asarray([mine]), ppo, 7.0)[0])
        assert problem.mean_fitness(point, baselines) == expected
        assert problem.control_score(task, keys, 4) == ppo
    assert calls == [4, 4, 4]  # the first point, PPO once, the second point: every call of 4 rows


@pytest.mark.slow  # 32 s on 2 cores
def test_validation_trains_each_task_alone_on_a_device_of_its_own_and_ppo_once(tmp_path, monkeypatch):
    """Where the paired call would give each device one row (one validation pair on two devices), each validation
    task trains the point alone in a one-device program, task j on device j, and PPO's side is trained once per
    run on the same device: the scores are those of that program, a second validation trains the points only,
    and `env_steps` counts the point's runs. On one device the pair trains as before."""
    # An empty baseline cache of its own: a command another test ran in this process may have turned the
    # process's cache on and stored the same PPO figures there.
    monkeypatch.setattr(baseline_cache, "_root", tmp_path / "baselines")
    config = discover(validation={"tasks": [{"env": "Catch-bsuite", "timesteps": [512, 256], "seeds": 4,
                                             "train": TRAIN}], "every": 1})
    step = GenerationStep(parse_config(config), mesh=make_mesh(jax.devices()[:2]))
    problem = step.problem
    meshes = [problem.own_device(t, j, 1) for j, t in enumerate(problem.valid_tasks)]
    assert [list(m.devices.flat) for m in meshes] == [[d] for d in jax.devices()[:2]]
    assert [problem.validation_rows(j) for j in range(len(problem.valid_tasks))] == [1, 1]  # the plan's count
    baselines = Baselines(random={"Catch-bsuite": -1.0}, paired=True)
    population = hosts.to_host(step.ask(step.keys(0).ask, step.init(step.base_key))[0])
    calls = []
    point_returns = problem._point_returns
    problem._point_returns = lambda point, task, keys, rows, mesh=None: (
        calls.append((task.name, rows, mesh)) or point_returns(point, task, keys, rows, mesh))

    def one_device_return(point, task, mesh):  # the point's mean return in the task's one-device program
        keys = problem.validation_keys(task)
        args = problem.program_args(task, hosts.to_global(paired.copies(point, 1), problem.mesh), keys, mesh)
        return paired.run_mean(hosts.to_host(task.program_on(mesh)(*args)))

    ppo = [one_device_return(problem.control, t, m) for t, m in zip(problem.valid_tasks, meshes, strict=True)]
    for m in range(2):  # two points, as two validations of a run
        point = jax.tree.map(lambda x, m=m: x[m], population)
        ran = problem.env_steps
        _, per_task = problem.validation(point, baselines)
        assert problem.env_steps - ran == sum(4 * t.steps_per_run for t in problem.valid_tasks)  # the points' runs
        for task, mesh, control in zip(problem.valid_tasks, meshes, ppo, strict=True):
            mine = one_device_return(point, task, mesh)
            assert per_task[task.name] == float(paired.relative(np.asarray([mine]), control,
                                                                 float(ppo_gap(control, -1.0)))[0])
    expected = [(t.name, 1, m) for t, m in zip(problem.valid_tasks, meshes, strict=True)]
    assert calls == [c for c in expected for _ in range(2)] + expected  # the first point and PPO, the second

    one = GenerationStep(parse_config(config), mesh=make_mesh(jax.devices()[:1])).problem
    assert one.own_device(one.valid_tasks[0], 0, 1) is None and one.validation_rows(0) == 2


def test_rows_pad_to_the_device_count():
    for P in (2, 4, 6, 16):
        for devices in (1, 2, 3, 4):
            rows = paired.count_rows(P, devices)
            assert rows % devices == 0 and P < rows <= P + devices
            tree = paired.with_control({"w": np.ones((P, 3))}, {"w": np.zeros(3)}, devices)
            assert tree["w"].shape == (rows, 3) and np.all(tree["w"][P:] == 0)
            meta_rows, n = paired.pairs({"w": np.ones(3)}, {"w": np.zeros(3)}, 3, devices, rows)
            assert n % devices == 0 and n >= max(6, rows)
            assert meta_rows["w"][:3].sum() == 9 and meta_rows["w"][3:].sum() == 0
            for pairs in range(1, 12):  # the mean alone: one row per device only where the paired call has one
                total = paired.paired_rows(pairs, devices, rows)
                alone = paired.point_rows(pairs, devices, total)
                assert alone % devices == 0 and pairs <= alone and (alone == devices) == (total == devices)


# ---------------------------------------------------------------------------------------------------------
# validation and the kept objective


def test_validation_keeps_the_best_generation(full_run):
    out, result = full_run
    lines = metrics(out)
    scores = [(0, lines[0]["validation_of_initial_mean"])]
    scores += [(line["generation"] + 1, line["validation"]) for line in lines]
    best_gen, best = result.best_generation, result.best_validation
    summary = json.loads((out / "summary.json").read_text())
    assert summary["best_generation"] == best_gen and summary["objective_best"] == "objective_best.msgpack"
    # the kept generation has the highest validation score of those recorded (ties keep the earliest)
    later = [s for g, s in scores if g > best_gen and s is not None]
    assert all(s <= best for s in later)
    # a scoring generation records where its time went, hook by hook; a training generation has no such field
    for line in lines:
        ran = [k for k in ("fitness_of_mean", "validation", "fitness_of_best") if k in line]
        assert sorted(line.get("scoring_seconds", {})) == sorted(ran)
        assert all(seconds > 0 for seconds in line.get("scoring_seconds", {}).values())
    if best_gen > 0:
        assert dict(scores)[best_gen] == best
    # and the kept objective, validated again, scores exactly what was recorded
    step = GenerationStep(parse_config(discover()))
    _, meta = load_objective(out / "objective_best.msgpack")
    assert step.problem.validation(meta, Baselines(random=measure_random(step.problem), paired=True))[0] == best
    # commands given the run directory use the kept objective
    from metadisco.evaluate.methods import method_from, run_objective_file

    assert run_objective_file(out).name == "objective_best.msgpack"
    kept = method_from(str(out)).meta
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(kept), jax.tree.leaves(meta), strict=True))


def test_generation_zero_is_ppo_on_validation_and_fresh_seeds(full_run):
    out, result = full_run
    assert result.fitness_of_initial_mean == 1.0  # the start point is PPO exactly (output layer at zero)
    line = metrics(out)[0]
    assert line["tasks"] and all(name in line["baseline"] for name in line["tasks"])
    for lines in metrics(out):  # the drawn learning rate of each task is recorded, within its range of 0.01
        assert set(lines["settings"]) == set(lines["tasks"])
        assert all(0.005 <= v["lr"] <= 0.02 for v in lines["settings"].values())
    assert json.loads((out / "baselines.json").read_text())["baseline_gap"].keys() == {
        "CartPole-v1@256", "CartPole-v1@512", "UmbrellaChain-bsuite@512"}
    assert result.fitness_of_best is not None and math.isfinite(result.fitness_of_best)


def test_resume_repeats_sampling_and_validation_byte_for_byte(full_run, tmp_path):
    out, _ = full_run
    meta_train(discover(generations=2), tmp_path, progress=False)
    meta_train(discover(), tmp_path, resume=True, progress=False)
    for name in ("objective.msgpack", "objective_best.msgpack"):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name
    keys = ("generation", "tasks", "settings", "fitness_mean", "fitness_max", "ppo", "validation",
            "best_generation", "fitness_of_mean")
    assert [{k: x.get(k) for k in keys} for x in metrics(tmp_path)] == [{k: x.get(k) for k in keys}
                                                                        for x in metrics(out)]


# ---------------------------------------------------------------------------------------------------------
# the probe


def test_pair_stats_find_signal_and_noise():
    rng = np.random.default_rng(1)
    true = rng.normal(0, 1.0, (16, 1))
    clean = _pair_stats(true + rng.normal(0, 0.1, (16, 64)), 4)
    noisy = _pair_stats(true + rng.normal(0, 4.0, (16, 256)), 4)  # pair SNR at 4 seeds ~ 1 / (16 / 4)
    assert clean["signal_fraction"] > 0.9 and clean["split_half_reliability"] > 0.9
    assert noisy["signal_fraction"] < 0.3 and noisy["seeds_for_snr_1"] > 4
    # pair SNR is linear in seeds: the advised seed count reaches SNR ~ 1
    assert noisy["pair_snr"] * noisy["seeds_for_snr_1"] / 4 >= 1.0


def test_probe_combines_tasks_with_different_seed_counts():
    """Equal seeds: seed s of every task is one combined run. Unequal (a task at 4 seeds beside one at 2): each
    block of a task's seeds is averaged first, as one member's fitness averages them."""
    rng = np.random.default_rng(2)
    for _ in range(20):
        k, repeats = int(rng.integers(2, 9)), int(rng.integers(1, 4))
        a, b = rng.normal(size=(k, repeats * 2)), rng.normal(size=(k, repeats * 2))
        same, unit = _combine([a, b], [2, 2], repeats)
        assert unit == 2 and np.allclose(same, (a + b) / 2)
        c = rng.normal(size=(k, repeats * 4))
        mixed, unit = _combine([a, c], [2, 4], repeats)
        assert unit == 1 and mixed.shape == (k, repeats)
        for r in range(repeats):
            want = (a[:, 2 * r:2 * r + 2].mean(axis=1) + c[:, 4 * r:4 * r + 4].mean(axis=1)) / 2
            assert np.allclose(mixed[:, r], want)


def test_probe_names_tasks_that_no_run_could_score():
    from metadisco.cli.probe_cmd import unscored_notes

    report = {"tasks": {"Freeway-MinAtar@250000": {"ppo": math.nan},
                        "Gone@1000": {"ppo": None},  # as read back from --out JSON
                        "CartPole-v1@24576": {"baseline": 278.0}}}  # "ppo": an old report's key
    notes = unscored_notes(report)
    assert [n.split(":")[1].strip() for n in notes] == ["Freeway-MinAtar@250000", "Gone@1000"]
    assert all("no episode ended" in n and "diverged" in n for n in notes)


def test_probe_counts_the_seeds_its_pair_statistics_could_use():
    """A seed enters the pair statistics only where every probed member has a final return; a task left with fewer
    than 2 such seeds has no SNR (its columns read "-") and a note says why, without numpy warnings."""
    import warnings

    from metadisco.cli.probe_cmd import unscored_notes
    from metadisco.meta.probe import _task_stats

    rng = np.random.default_rng(3)
    for _ in range(20):
        k, S, repeats = int(rng.integers(2, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
        F = rng.normal(100.0, 10.0, (2 * k + 2, repeats * S))
        holes = rng.random(F.shape) < rng.uniform(0.0, 0.6)
        holes[2 * k + 1, 0] = False  # PPO scores on at least one seed
        F[holes] = np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            row, d = _task_stats(F, k, S, repeats, random=0.0)
        usable = int(np.all(~holes[:2 * k], axis=0).sum())
        assert row["scored_seeds"] == usable and row["diverged_runs"] == int(holes[:2 * k + 2].sum())
        assert d.shape == (k, repeats * S) and np.array_equal(np.isnan(d), holes[:k] | holes[k:2 * k])
        assert ("pair_snr" in row) == (usable >= 2)
        notes = unscored_notes({"tasks": {"T@1": row}})
        assert len(notes) == (usable < 2) and all(f"only {usable} of {repeats * S} seeds" in n for n in notes)


def test_probe_reports_every_task_and_a_verdict(full_run):
    # one task at 4 seeds beside one at 2 (DISCOVER's own, whose programs full_run compiled): the combined figures
    # need no common seed axis
    config = discover()
    assert [t["seeds"] for t in config["tasks"]] == [2, 4]
    step = GenerationStep(parse_config(config))
    report = probe(step, repeats=2)
    assert set(report["tasks"]) == {t.name for t in step.problem.tasks}
    for task in step.problem.tasks:
        stats = report["tasks"][task.name]
        assert stats["seeds"] == 2 * task.cfg.seeds and stats["seed_std"] >= 0 and stats["baseline_gap"] > 0
    assert report["verdict"].split(":")[0] in ("usable", "weak", "noise")
    assert report["pairs_probed"] == 2 and 0 <= report["effective_pairs"] <= 2


@pytest.mark.heavy
@pytest.mark.slow  # 39 s on 2 cores
def test_a_validation_that_never_scores_keeps_nothing_and_the_run_ends(tmp_path, capsys):
    """Acrobot's episodes last up to 500 steps; 512 steps over 4 envs end none, so every validation score is
    None. The run must still end (it once crashed at its last generation, loading an objective_best.msgpack that
    was never written), keep nothing, and say so."""
    never = {"env": "Acrobot-v1", "timesteps": 512, "seeds": 2, "train": TRAIN}
    config = discover(validation={"tasks": [never], "every": 1}, generations=2, eval_every=2,
                      held_out_envs=["Breakout-MinAtar@500000"])
    result = meta_train(config, tmp_path, progress=False)
    assert result.best_generation is None and result.fitness_of_best is None
    lines = metrics(tmp_path)
    assert len(lines) == 2 and all(line["validation"] is None for line in lines)
    assert lines[0]["validation_of_initial_mean"] is None and lines[-1]["fitness_of_best"] is None
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["objective_best"] is None and not (tmp_path / "objective_best.msgpack").exists()
    assert (tmp_path / "objective.msgpack").exists()  # what evaluate / plot / distil fall back to


def test_when_nothing_beats_the_start_the_kept_objective_is_scored_without_training_it_again(tmp_path,
                                                                                            monkeypatch):
    """An ES step too small to change a float32 drift (lr 1e-30): the one generation's mean trains exactly as PPO,
    ties the start on validation, and ties keep the earliest, so the kept objective is generation 0's mean. Its
    fitness on the training tasks' fresh seeds was measured before the first generation, so the last generation
    reports that number (the same keys and point: what a new scoring pass gives, checked here) instead of training
    it again."""
    config = discover(generations=1, eval_every=1, validation={"tasks": DISCOVER["validation"]["tasks"], "every": 5},
                      strategy={"name": "Open_ES", "population_size": 4, "sigma_init": 0.5, "lr": 1e-30})
    from metadisco.meta import hooks

    # the one way to a new scoring pass of the kept objective: it must not be taken
    monkeypatch.setattr(hooks, "_best_point", lambda run: pytest.fail("the kept objective was trained again"))
    result = meta_train(config, tmp_path, progress=False)
    assert result.best_generation == 0 and result.best_validation == 1.0  # PPO itself, paired against PPO
    assert result.fitness_of_best == result.fitness_of_initial_mean
    line = metrics(tmp_path)[-1]
    assert line["validation"] == 1.0 and line["fitness_of_best"] == result.fitness_of_initial_mean
    step = GenerationStep(parse_config(config))
    _, kept = load_objective(tmp_path / "objective_best.msgpack")
    baselines = Baselines(random=measure_random(step.problem), paired=True)
    assert step.problem.mean_fitness(kept, baselines) == result.fitness_of_initial_mean
