"""Analysis: figures, parametric and symbolic distillation, the distilled objective file's closed loop."""

import json

import jax
import jax.numpy as jnp
import matplotlib.image
import numpy as np
import pytest

from metadisco.analysis import families
from metadisco.analysis.distil import distil, grid_target
from metadisco.analysis.parametric import distil_parametric
from metadisco.analysis.surfaces import surface
from metadisco.analysis.sym import to_numpy, to_sympy
from metadisco.analysis.validity import drift_violation
from metadisco.cli import main
from metadisco.objectives import (
    BUILTIN_OBJECTIVES,
    DRIFTS,
    OPTIMIZERS,
    VALUE_LOSSES,
    Objective,
    load_objective,
    save_objective,
)
from metadisco.objectives.drift import dpo_drift, ppo_drift
from metadisco.objectives.expression import expression_drift

TINY = ["--set", "num_envs=4", "--set", "num_steps=16", "--set", "hidden_sizes=8,8", "--set", "num_minibatches=2"]


def test_numpy_families_match_the_jax_drifts():
    r, a = np.meshgrid(np.exp(np.linspace(-2, 2, 31)), np.linspace(-8, 8, 33))
    np.testing.assert_allclose(families.ppo(r, a, 0.2), ppo_drift(jnp.asarray(r), jnp.asarray(a), 0.2), atol=1e-5)
    np.testing.assert_allclose(families.dpo(r, a, 2.0, 0.6), dpo_drift(jnp.asarray(r), jnp.asarray(a), 2.0, 0.6),
                               atol=1e-4, rtol=1e-5)
    for name, fam in families.FAMILIES.items():  # the expression strings are the same functions, and valid
        theta = {"ppo": {"eps": 0.2}, "dpo": {"alpha": 2.0, "beta": 0.6}}[name]
        np.testing.assert_allclose(to_numpy(to_sympy(fam.expression, theta))(r, a), fam(r, a, *theta.values()),
                                   atol=1e-12)
        assert drift_violation(to_numpy(to_sympy(fam.expression, theta))) is None


@pytest.mark.parametrize("grid", ["log", "linear"])
def test_parametric_recovers_dpo_and_ppo(grid):
    dpo = BUILTIN_OBJECTIVES["dpo"]
    s = surface(dpo, dpo.zero_meta(), grid, 41, 41)
    best, _ = distil_parametric(s.r, s.a, s.drift)
    assert best.family == "dpo" and best.r2 >= 0.999
    assert best.params["alpha"] == pytest.approx(2.0, rel=0.02)
    assert best.params["beta"] == pytest.approx(0.6, rel=0.02)
    ppo = BUILTIN_OBJECTIVES["ppo"]
    s = surface(ppo, ppo.zero_meta(), grid, 41, 41)
    best, fits = distil_parametric(s.r, s.a, s.drift)
    assert best.family == "ppo" and best.r2 >= 0.999
    assert best.params["eps"] == pytest.approx(0.2, abs=1e-3)
    assert {f.family for f in fits} == {"ppo", "dpo"}


def test_symbolic_distillation_of_ppo_is_a_valid_drift_with_high_r2():
    ppo = BUILTIN_OBJECTIVES["ppo"]
    result = distil(grid_target(ppo, ppo.zero_meta(), "log", 41), "symbolic",
                    {"population": 500, "generations": 10, "random_state": 0})
    assert result["r2"] >= 0.99, result["expression"]
    expr = to_sympy(result["expression"])
    assert expr.free_symbols <= {s for s in expr.free_symbols if s.name in ("r", "A")}
    assert drift_violation(to_numpy(expr)) is None
    assert result["latex"].startswith("\\max")
    expression_drift(result["expression"])  # the objectives' own parser accepts it (valid at r = 1)


def _random_meta(objective, seed):
    leaves, tree = jax.tree.flatten(objective.zero_meta())
    keys = jax.random.split(jax.random.PRNGKey(seed), max(len(leaves), 1))
    noise = [0.3 * jax.random.normal(k, x.shape, x.dtype) for k, x in zip(keys, leaves, strict=False)]
    return jax.tree.unflatten(tree, noise)


@pytest.fixture(scope="module")
def learned_run(tmp_path_factory):
    """A run directory as meta-train leaves it: TA-LPO drift, learned value loss and optimiser with random
    non-zero meta-parameters, and a metrics.jsonl of three generations."""
    run = tmp_path_factory.mktemp("run")
    objective = Objective(drift=DRIFTS.make("talpo", hidden=16), value_loss=VALUE_LOSSES.make("learned"),
                          optimizer=OPTIMIZERS.make("learned"))
    save_objective(run / "objective.msgpack", objective, _random_meta(objective, 0))
    (run / "metrics.jsonl").write_text(_metrics_lines())
    return run


def _metrics_lines() -> str:
    """Three generations, the ES mean scored on fresh seeds at the start and after the second."""
    rows = [{"generation": g, "fitness_mean": 10.0 + 5 * g, "fitness_max": 20.0 + 6 * g, "fitness_min": 5.0 + g,
             "seconds": 1.0} for g in range(3)]
    rows[0]["fitness_of_initial_mean"] = 12.5
    rows[1]["fitness_of_mean"] = 31.25
    return "".join(json.dumps(row) + "\n" for row in rows)


def _assert_png(path):
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300
    assert image[..., :3].std() > 0.05  # not blank


@pytest.mark.heavy
@pytest.mark.slow  # 30 s on 2 cores
def test_plot_builtin_and_lpo(tmp_path):
    assert main(["plot", "dpo", "--out", str(tmp_path / "dpo")]) == 0
    names = {p.name for p in (tmp_path / "dpo").iterdir()}
    assert names == {"drift_heatmap_linear.png", "drift_heatmap_log.png", "drift_slices_linear.png",
                     "drift_slices_log.png", "value_loss.png", "optimizer.png"}
    lpo = Objective(drift=DRIFTS.make("lpo", hidden=16))
    save_objective(tmp_path / "lpo.msgpack", lpo, _random_meta(lpo, 1))
    assert main(["plot", str(tmp_path / "lpo.msgpack"), "--out", str(tmp_path / "lpo")]) == 0
    for path in [*(tmp_path / "dpo").iterdir(), *(tmp_path / "lpo").iterdir()]:
        _assert_png(path)


@pytest.mark.slow  # 30 s on 2 cores
def test_report_of_a_run_directory_draws_every_figure(learned_run, capsys):
    (learned_run / "eval").mkdir()
    (learned_run / "eval" / "eval.md").write_text("| env | method | mean |\n|---|---|---|\n| CartPole-v1 | x | 1 |\n")
    (learned_run / "a_check").mkdir()  # another evaluation, sorted before eval/: the run's own comes first
    (learned_run / "a_check" / "eval.md").write_text("| env | method | mean |\n|---|---|---|\n| Acrobot-v1 | y | 2 |\n")
    assert main(["report", str(learned_run)]) == 0  # draws what `metadisco plot RUN_DIR` draws, into figures/
    names = {p.name for p in (learned_run / "figures").iterdir()}
    assert {"drift_progress.png", "population_curve.png", "value_loss.png", "optimizer.png"} <= names
    for path in (learned_run / "figures").iterdir():
        _assert_png(path)
    report = (learned_run / "report.md").read_text()
    assert "![meta-training curve](figures/population_curve.png)" in report
    assert "The ES mean on fresh seeds (the point meta-training keeps): 31.25 after 2 generations (12.5 at the " \
        "start)." in report
    assert "figures/drift_progress.png" in report and "| CartPole-v1 | x | 1 |" in report
    assert report.index("From `eval/eval.md`") < report.index("From `a_check/eval.md`")
    assert "## Distilled forms" in report and (learned_run / "distil" / "distilled.msgpack").is_file()


@pytest.mark.slow  # 14 s on 2 cores
def test_report_of_a_run_that_learns_only_the_optimiser_distils_nothing(tmp_path):
    """PPO's drift in an optimiser-only run was not learned: the report says so instead of fitting its closed
    form, and draws the rest."""
    objective = Objective(optimizer=OPTIMIZERS.make("learned"))
    save_objective(tmp_path / "objective.msgpack", objective, _random_meta(objective, 2))
    (tmp_path / "metrics.jsonl").write_text(_metrics_lines())
    assert main(["report", str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text()
    assert "The drift (ppo) has no meta-parameters: it was not learned, so there is nothing to distil." in report
    assert not (tmp_path / "distil").exists() and "| file | method |" not in report
    assert "figures/optimizer.png" in report and "31.25 after 2 generations" in report


def test_bad_inputs_are_one_line_errors(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "missing.msgpack"), "--out", str(tmp_path / "x")]) == 2
    assert main(["plot", "nope", "--out", str(tmp_path / "x")]) == 2
    assert main(["distil", "dpo", "--points", "3", "--out", str(tmp_path / "x")]) == 2
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 4


@pytest.mark.heavy
@pytest.mark.slow  # 21 s on 2 cores
def test_distilled_file_trains_and_retained_performance(tmp_path):
    out = tmp_path / "distil"
    assert main(["distil", "dpo", "--out", str(out), "--evaluate-on", "CartPole-v1", "--seeds", "2",
                 "--timesteps", "512", *TINY]) == 0
    result = json.loads((out / "distilled.json").read_text())
    assert result["family"] == "dpo" and result["params"]["alpha"] == pytest.approx(2.0, rel=0.02)
    ev = result["evaluation"]
    assert ev["original"]["mean"] is not None and ev["retained"] is not None
    # The evaluation trained the file itself (`distil` reads distilled.msgpack back to evaluate it), so the file
    # trains: no seed diverged, and DPO distilled into its own family is DPO again (same seeds, nearly the same
    # returns). `train --objective FILE` is tests/cli/test_objectives_cli.py's test_train_runs_an_objective_file.
    assert np.isfinite(ev["distilled"]["final_return"]).all() and len(ev["distilled"]["final_return"]) == 2
    np.testing.assert_allclose(ev["distilled"]["final_return"], ev["original"]["final_return"], rtol=0.05)
    loaded, _ = load_objective(out / "distilled.msgpack")
    assert loaded.drift.name == "expression" and result["objective_spec"]["drift"]["kind"] == "expression"


@pytest.mark.slow  # 16 s on 2 cores
def test_weighted_distillation_collects_training_histogram(tmp_path):
    out = tmp_path / "weighted"
    assert main(["distil", "dpo", "--weighted-by-env", "CartPole-v1", "--collect-timesteps", "512", *TINY,
                 "--out", str(out)]) == 0
    result = json.loads((out / "distilled.json").read_text())
    target = result["target"]
    # 8 updates x 4 epochs x 64 samples (2 minibatches of 32) per update.
    assert target["weighted"] and target["samples"] == 8 * 4 * 64 and target["coverage"] > 0.99
    assert result["family"] == "dpo" and result["r2"] >= 0.999


def test_symbolic_options_are_one_settings_group_and_unknown_ones_are_named():
    from metadisco.analysis.symbolic import SymbolicSearch
    from metadisco.core.errors import UserError

    search = SymbolicSearch.from_options({"population": 50, "features": ["x", "A", "log_r"]})
    assert search == SymbolicSearch(population=50, features=("x", "A", "log_r"))
    assert SymbolicSearch.from_options(None) == SymbolicSearch()
    with pytest.raises(UserError, match=r"unknown symbolic regression option\(s\) popsize; known: digits, "):
        SymbolicSearch.from_options({"popsize": 50})
