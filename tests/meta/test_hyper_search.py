"""Hyperparameters evolved with the objective (a meta-training config's `hyper:` section): the section's schema
and its one-line errors, units at zero giving each task's own settings bit for bit, members training at their
own settings, and a tiny paired, validated run: hyper.json, objective files without settings, generation 0 is
PPO exactly, and a resume is byte-identical.

Runs are tiny (CartPole 4 envs x 16 steps, hidden-8 nets, population 4) and share compiled programs with
test_meta_training and test_discovery (`metadisco.meta.tasks._PROGRAMS`, and the persistent cache).
"""

from __future__ import annotations

import json
import math
import shutil

import jax
import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_meta import TINY, read_metrics, tiny

from metadisco.core.errors import UserError
from metadisco.meta import paired
from metadisco.meta.hyper_search import HyperSearch, Searched, parse_hyper
from metadisco.meta.load import parse_config
from metadisco.meta.loop import meta_train
from metadisco.meta.step import GenerationStep
from metadisco.objectives.files import load_objective
from metadisco.parallel import hosts
from metadisco.trainers.config import DEFAULT
from metadisco.trainers.hyper import hyper_of, stack, traced_fields

LR_LOG = {"lr": {"scale": "log"}}
CATCH = {"env": "Catch-bsuite", "timesteps": 512, "seeds": 2, "train": TINY["tasks"][0]["train"]}


def paired_run(**changes) -> dict:
    """TINY with lr evolved, paired normalisation and a validation task (the kept objective's settings too)."""
    return tiny(hyper=LR_LOG, normalise="paired", validation={"tasks": [CATCH], "every": 1}, generations=3,
                **changes)


# ---------------------------------------------------------------------------------------------------------
# the config section


def test_a_hyper_section_reads_back_with_its_defaults():
    config = parse_config(tiny(hyper={"lr": {}, "ent_coef": {"step": 0.01, "high": 0.1},
                                      "gae_lambda": {"scale": "log", "step": 0.5}}))
    assert config.hyper.searched == (Searched("lr", True, 1.0), Searched("ent_coef", False, 0.01, None, 0.1),
                                     Searched("gae_lambda", True, 0.5))
    assert config.to_dict()["hyper"] == {"lr": {"scale": "log", "step": 1.0},
                                         "ent_coef": {"scale": "linear", "step": 0.01, "high": 0.1},
                                         "gae_lambda": {"scale": "log", "step": 0.5}}
    assert parse_config(config.to_dict()) == config  # the resolved config.yaml reads back the same
    assert parse_config(TINY, ["hyper.lr.scale=linear", "hyper.lr.step=0.001"]).hyper.searched == (
        Searched("lr", False, 0.001),)
    # without the section nothing is searched: the resolved config's section is empty
    assert parse_config(TINY).to_dict()["hyper"] == {} and not parse_config(TINY).hyper
    assert not parse_config(tiny(hyper=None)).hyper


@pytest.mark.parametrize("hyper, overrides, message", [
    ({"lrr": {}}, [], "unknown hyper: hyperparameter 'lrr'; did you mean 'lr'"),
    ({"num_envs": {}}, [], "hyper: num_envs fixes the shape or structure .* traced settings are lr, gamma"),
    ({"lr": {"scale": "cubic"}}, [], "unknown hyper.lr.scale 'cubic'; known: linear, log"),
    ({"lr": {"init": "task"}}, [], "unknown key under hyper.lr 'init'; known: high, low, scale, step"),
    ({"gamma": {}}, [], "hyper.gamma: a linear scale needs step"),
    ({"lr": {"step": -1}}, [], r"hyper.lr.step must be a finite number in \(0, inf\), got -1"),
    ({"lr": {"step": ".nan"}}, [], "hyper.lr.step must be a finite number"),
    ({"lr": 3}, [], "hyper.lr must be a mapping"),
    ([1], [], "config key hyper must be a mapping"),
    ({"lr": {"low": 1, "high": 0.5}}, [], "hyper.lr: low 1 must not exceed high 0.5"),
    ({"gamma": {"step": 0.01, "high": 2}}, [], r"hyper.gamma.high: gamma must be a finite number in \(0, 1\]"),
    ({"lr": {"low": 0.1}}, [], r"hyper.lr: tasks.0 \(CartPole-v1\) has lr 0.01, outside \[0.1, inf\]"),
    ({"ent_coef": {"scale": "log"}}, ["tasks.0.train.ent_coef=0"], "has ent_coef 0, which a log scale"),
])
def test_hyper_section_errors(hyper, overrides, message):
    with pytest.raises(UserError, match=message):
        parse_config(tiny(hyper=hyper), overrides)


def test_a_setting_the_algorithm_ignores_is_an_error():
    td = tiny(objective={"trace": {"kind": "learned", "hidden": [8]}}, hyper={"ent_coef": {"step": 0.01}},
              tasks=[{"env": "CartPole-v1", "timesteps": 4096}])
    with pytest.raises(UserError, match="hyper.ent_coef: algorithm pqn ignores ent_coef"):
        parse_config(td)
    assert parse_config(td, ["hyper={gamma: {step: 0.01}}"]).hyper.names == ("gamma",)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.dictionaries(st.sampled_from(["lr", "gamma", "scale", "step", "x"]), st.one_of(
    st.none(), st.floats(), st.text(max_size=3), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(["scale", "step", "low", "high", "init"]),
                    st.one_of(st.floats(), st.sampled_from(["log", "linear", "", "nan"]), st.none()), max_size=3)),
    max_size=3))
def test_any_hyper_section_reads_or_is_a_user_error(section):
    try:
        parse_hyper(section)
    except UserError as e:
        assert "\n" not in str(e)


def test_the_command_line_says_a_bad_hyper_section_in_one_line(tmp_path, capsys):
    from metadisco.cli import main

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(tiny(hyper={"lr": {"scale": "cubic"}})))
    assert main(["meta-train", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown hyper.lr.scale 'cubic'" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------------------------------------------
# units -> values


def _searched_around(draw, name: str, own: float) -> Searched:
    """A random searched setting whose bounds hold `own`."""
    log = own > 0 and draw(st.booleans())
    step = draw(st.floats(1e-4, 10.0))
    low = draw(st.one_of(st.none(), st.floats(0.0, own)))
    high = draw(st.one_of(st.none(), st.floats(own, 1.0 if name in ("gamma", "gae_lambda") else 1e3)))
    return Searched(name, log, step, low, high)


@st.composite
def task_and_search(draw):
    own = {"lr": draw(st.floats(1e-7, 1.0)), "gamma": draw(st.floats(1e-3, 1.0)),
           "gae_lambda": draw(st.floats(0.0, 1.0)), "ent_coef": draw(st.floats(0.0, 1.0)),
           "vf_coef": draw(st.floats(0.0, 10.0)), "max_grad_norm": draw(st.floats(1e-3, 100.0))}
    config = DEFAULT.with_settings(own)
    names = draw(st.lists(st.sampled_from(traced_fields(DEFAULT)), min_size=1, max_size=6, unique=True))
    return config, HyperSearch(tuple(_searched_around(draw, n, own[n]) for n in names))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(task_and_search(), st.integers(1, 5))
def test_zero_units_give_each_tasks_own_settings_bit_for_bit(case, rows):
    config, search = case
    zero = {name: np.zeros(rows, np.float32) for name in search.names}
    got = search.task_hypers(config, zero)
    want = stack([hyper_of(config)] * rows)  # what a run without a hyper section trains with
    assert type(got) is type(want)
    for name in type(want)._fields:
        assert getattr(got, name).dtype == np.float32
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    assert search.task_values(config, {n: np.float32(0) for n in search.names}) == {
        n: float(np.float32(config.setting(n))) for n in search.names}


def test_units_move_a_setting_by_its_scale_and_stay_in_range():
    search = parse_hyper({"lr": {}, "gamma": {"step": 0.01}, "ent_coef": {"step": 0.01, "high": 0.02}})
    u = np.asarray([-1.0, -0.5, 0.5, 1.0, 50.0], np.float32)
    got = search.task_hypers(DEFAULT, {"lr": u, "gamma": u, "ent_coef": -u})
    np.testing.assert_allclose(got.lr[:4], DEFAULT.lr * np.exp(u[:4]), rtol=1e-6)  # a unit is a factor e
    np.testing.assert_allclose(got.gamma[:4], DEFAULT.gamma + 0.01 * u[:4], rtol=1e-6)  # a unit adds step
    assert got.gamma[4] == 1.0 and got.ent_coef[0] == 0.02 and got.ent_coef[4] == 0.0  # clipped to range
    np.testing.assert_array_equal(got.vf_coef, np.float32(DEFAULT.options.vf_coef))  # not searched: the task's own


# ---------------------------------------------------------------------------------------------------------
# the generation step


@pytest.mark.heavy
@pytest.mark.slow  # 29 s on 2 cores
def test_members_train_at_their_own_settings_and_zero_units_train_as_without_a_section():
    step = GenerationStep(parse_config(tiny(hyper=LR_LOG, normalise="paired")))
    plain = GenerationStep(parse_config(tiny(normalise="paired")))
    task, P = step.problem.tasks[0], step.population_size
    keys = step.keys(0)
    population, _ = step.ask(keys.ask, step.init())
    meta, units = step.split(hosts.to_host(population))
    assert set(units) == {"lr"} and units["lr"].shape == (P,)
    # the objective's part is drawn as without a section (same start point, structure and dtypes)
    assert jax.tree.structure(meta) == jax.tree.structure(plain.split(plain.solution(plain.init()))[0])
    lr = step.hyper.task_hypers(task.train_config, units).lr
    assert len(set(lr.tolist())) == P  # every member its own learning rate
    np.testing.assert_allclose(lr[:P // 2] * lr[P // 2:], np.float32(0.01) ** 2, rtol=1e-5)  # antithetic in log lr
    # the rows train at those settings: the same members with every unit at zero score otherwise ... (each block
    # is the members, PPO and padding, as a paired generation trains them: hyper_run's program, compiled once)
    def rows_of(step, point):
        return hosts.to_global(paired.with_control(point, step.problem.control, step.devices), step.mesh)

    seeds = paired.rows_of(keys.tasks[0][0], step.problem.population_rows())
    zeroed = step.hyper.join(meta, {"lr": np.zeros(P, np.float32)})
    own = step.problem.train_rows(task, rows_of(step, hosts.to_host(population)), seeds)[:P]
    at_zero = step.problem.train_rows(task, rows_of(step, zeroed), seeds)[:P]
    assert not np.array_equal(own, at_zero)
    # ... and at zero units they train exactly as the same objective without a hyper section
    np.testing.assert_array_equal(at_zero, plain.problem.train_rows(task, rows_of(plain, meta), seeds)[:P])
    # the PPO control keeps the task's own settings
    assert step.split(step.problem.control)[1] == {"lr": 0.0}


# ---------------------------------------------------------------------------------------------------------
# a tiny run: hyper.json, objective files, generation 0, resume


@pytest.fixture(scope="module")
def hyper_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hyper")
    return out, meta_train(paired_run(), out, progress=False)


@pytest.mark.heavy
@pytest.mark.slow  # 32 s on 2 cores
def test_hyper_json_holds_the_evolved_settings(hyper_run):
    out, result = hyper_run
    doc = json.loads((out / "hyper.json").read_text())
    assert doc["searched"] == {"lr": {"scale": "log", "step": 1.0}}
    mean = doc["es_mean"]
    assert mean == result.hyper and mean["generation"] == 3
    u = mean["units"]["lr"]
    assert u != 0.0  # the ES moved the learning rate
    assert set(mean["tasks"]) == {"CartPole-v1@256", "Catch-bsuite@512"}
    for values in mean["tasks"].values():  # both tasks train at lr 0.01 of their own
        assert math.isclose(values["lr"], 0.01 * math.exp(u), rel_tol=1e-6)
    best = doc["best"]
    assert best["generation"] == result.best_generation
    if best["generation"] == 0:
        assert best["units"] == {"lr": 0.0} and best["tasks"]["CartPole-v1@256"]["lr"] == float(np.float32(0.01))
    assert json.loads((out / "summary.json").read_text())["hyper"] == "hyper.json"
    assert result.fitness_of_best is not None


def test_generation_zero_is_ppo_at_each_tasks_own_settings(hyper_run):
    out, result = hyper_run
    assert result.fitness_of_initial_mean == 1.0  # the start point, units at zero, is PPO exactly
    assert read_metrics(out)[0]["validation_of_initial_mean"] == 1.0


def test_objective_files_hold_the_objective_alone(hyper_run, capsys):
    from metadisco.cli import main
    from metadisco.evaluate.methods import method_from

    out, result = hyper_run
    config = parse_config(paired_run())
    for name in ("objective.msgpack", "objective_best.msgpack"):
        objective, meta = load_objective(out / name)
        assert objective == config.objective
        assert jax.tree.structure(meta) == jax.tree.structure(config.objective.zero_meta())
    jax.tree.map(np.testing.assert_array_equal, load_objective(out / "objective.msgpack")[1], result.mean)
    assert method_from(str(out)).objective == config.objective  # evaluate reads the run directory as before
    assert main(["inspect", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"] == sum(
        np.size(x) for x in jax.tree.leaves(config.objective.zero_meta()))


def test_resume_is_byte_identical_with_evolved_settings(hyper_run, tmp_path):
    out, _ = hyper_run
    run = tmp_path / "run"
    shutil.copytree(out, run)
    (run / "checkpoints" / "gen_000003.msgpack").unlink()  # as if killed before the last checkpoint
    (run / "hyper.json").write_text("{half-written")
    meta_train(paired_run(), run, resume=True, progress=False)
    for name in ("objective.msgpack", "objective_best.msgpack", "hyper.json", "summary.json"):
        assert (run / name).read_bytes() == (out / name).read_bytes(), name
