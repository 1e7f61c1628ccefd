"""`metadisco evaluate`: identical seed keys across methods, files written, run directories, bad input.

One tiny trainer config throughout; the two compiled trainers (one for dpo, one shared by ppo and a ppo file)
are built once per session and reused by every evaluation here.
"""

import json
import math
import re
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

from metadisco.cli import main
from metadisco.core.errors import UserError
from metadisco.evaluate import Training, evaluate, prepare, summary
from metadisco.evaluate.layout import read_report
from metadisco.evaluate.runner import EpisodeCurves, MethodRun
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.objectives.files import save_objective
from metadisco.runs.seeds import seed_keys

ROOT = Path(__file__).resolve().parents[2]
ENV = "CartPole-v1"
SEEDS = 3
TINY = ["num_envs=4", "num_steps=16", "hidden_sizes=8,8", "update_epochs=1", "num_minibatches=1"]
TIMESTEPS = 16 * 64  # 16 updates of 64 steps


def tiny_args():
    return ["--seeds", str(SEEDS), "--timesteps", str(TIMESTEPS), "--no-progress",
            *[x for kv in TINY for x in ("--set", kv)]]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A ppo objective file and a meta-training run directory whose objective is dpo."""
    root = tmp_path_factory.mktemp("objectives")
    ppo_file = save_objective(root / "ppo_copy.msgpack", BUILTIN_OBJECTIVES["ppo"],
                              BUILTIN_OBJECTIVES["ppo"].zero_meta())
    run_dir = root / "run_a"
    run_dir.mkdir()
    dpo = BUILTIN_OBJECTIVES["dpo"]
    save_objective(run_dir / "objective.msgpack", dpo, dpo.zero_meta())
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"held_out_envs": [ENV], "generations": 3}))
    return {"ppo_file": str(ppo_file), "run_dir": str(run_dir)}


@pytest.fixture(scope="module")
def evaluated(files, tmp_path_factory):
    """The library call: dpo against ppo and a ppo file on the tiny config."""
    out = tmp_path_factory.mktemp("eval_lib")
    report, runs = evaluate("dpo", [ENV], ["ppo", files["ppo_file"]], SEEDS, out,
                            training=Training(TIMESTEPS, TINY), show_progress=False)
    return report, runs, out


@pytest.mark.heavy
@pytest.mark.slow  # 27 s on 2 cores
def test_seed_keys_identical_across_methods(evaluated):
    report, runs, _ = evaluated
    runs = runs[ENV]
    assert list(runs) == ["dpo", "ppo", "ppo_copy"]
    expected = np.asarray(jax.random.key_data(seed_keys(SEEDS, 0)))
    for run in runs.values():
        np.testing.assert_array_equal(run.key_data, expected)
    np.testing.assert_array_equal(np.asarray(report["settings"]["seed_keys"]), expected)
    # ppo and the ppo file share one compiled call (stacked meta-params); same keys -> the very same runs.
    assert runs["ppo"].group == runs["ppo_copy"].group != runs["dpo"].group
    np.testing.assert_array_equal(runs["ppo"].curves.episode_return, runs["ppo_copy"].curves.episode_return)
    # The first rollout comes before any update: with the same keys, dpo (a separate call) sees the same episodes.
    for field in ("episode_return", "episode_count"):
        np.testing.assert_array_equal(getattr(runs["dpo"].curves, field)[:, 0],
                                      getattr(runs["ppo"].curves, field)[:, 0])


def test_report_files_and_statistics(evaluated):
    report, _, out = evaluated
    assert sorted(p.name for p in out.iterdir()) == ["aggregate.png", "cells", "curves_CartPole-v1.png", "eval.json",
                                                     "eval.md"]
    on_disk = json.loads((out / "eval.json").read_text())
    assert list(on_disk) == ["schema", "settings", "envs", "aggregate"] and list(on_disk["envs"]) == [ENV]
    assert on_disk["schema"] == 2
    for label, entry in on_disk["envs"][ENV].items():
        assert len(entry["final_return"]) == SEEDS
        finite = [x for x in entry["final_return"] if x is not None]
        assert entry["finite_seeds"] == len(finite)
        assert entry["mean"] == pytest.approx(np.mean(finite))
        lo, hi = entry["ci95"]
        assert lo <= entry["iqm"] <= hi, label
    assert set(on_disk["aggregate"]["probability_of_improvement"]) == {"dpo > ppo", "dpo > ppo_copy"}
    for path in ("aggregate.png", "curves_CartPole-v1.png"):
        assert (out / path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "eval.md").read_text()
    assert "| CartPole-v1 | 1,024 | dpo |" in md and "P(dpo > ppo)" in md


def test_cli_evaluates_a_run_directory_on_its_held_out_envs(files, tmp_path, capsys):
    out = tmp_path / "eval_run"
    assert main(["evaluate", files["run_dir"], "--baselines", f"ppo,{files['ppo_file']}", "--out", str(out),
                 *tiny_args()]) == 0
    report = json.loads((out / "eval.json").read_text())
    assert list(report["envs"]) == [ENV]  # from held_out_envs
    assert list(report["envs"][ENV]) == ["run_a", "ppo", "ppo_copy"]
    assert report["settings"]["methods"]["run_a"]["spec"]["drift"]["kind"] == "dpo"
    assert (out / "eval.md").is_file() and (out / "curves_CartPole-v1.png").is_file()
    assert "P(run_a > ppo)" in capsys.readouterr().err


def _metrics(returns, counts):
    """The episode curves of hand-made runs [seeds, updates]."""
    return EpisodeCurves(np.asarray(returns, np.float64), np.asarray(counts))


def test_diverged_seeds_are_reported_not_dropped():
    keys = np.zeros((3, 2), np.uint32)
    ok = MethodRun(_metrics([[1.0, 2.0]] * 3, [[1, 1]] * 3), np.array([2.0, 3.0, 4.0]), np.array([1.5, 2.0, 2.5]),
                   np.zeros(3, bool), keys, 0, 1.0)
    bad = MethodRun(_metrics([[1.0, 2.0]] * 3, [[1, 1]] * 3), np.array([5.0, np.nan, np.nan]),
                    np.array([1.0, np.nan, np.nan]), np.array([False, True, False]), keys, 1, 1.0)
    report = summary.summarise({ENV: {"new": bad, "ppo": ok}}, {ENV: 64}, {ENV: 0.0}, "new", ["ppo"])
    entry = report["envs"][ENV]["new"]
    assert entry["seed_status"] == ["ok", "diverged", "no_episode"]
    assert entry["diverged_seeds"] == [1] and entry["no_episode_seeds"] == [2] and entry["finite_seeds"] == 1
    assert entry["mean"] == 5.0 and entry["ci95"] is None  # one scored seed: no interval
    # Unscored seeds lose every comparison: 5 beats 2, 3, 4; the two others beat nothing -> 3 / 9.
    assert report["aggregate"]["probability_of_improvement"]["new > ppo"]["p"] == pytest.approx(1 / 3)
    # On the area under the curve the one scored seed (1.0) beats none of 1.5, 2.0, 2.5: P = 0.
    by_score = report["aggregate"]["probability_of_improvement_by_score"]
    assert by_score["final_return"]["new > ppo"]["p"] == pytest.approx(1 / 3)
    assert by_score["mean_return"]["new > ppo"]["p"] == 0.0
    on_area = summary.summarise({ENV: {"new": bad, "ppo": ok}}, {ENV: 64}, {ENV: 0.0}, "new", ["ppo"],
                                score="mean_return")
    assert on_area["envs"][ENV]["ppo"]["mean"] == 2.0 and on_area["envs"][ENV]["new"]["mean"] == 1.0
    assert on_area["aggregate"]["score"] == "mean_return"
    assert on_area["aggregate"]["probability_of_improvement"]["new > ppo"]["p"] == 0.0
    report["settings"] = {"objective": "new", "baselines": ["ppo"], "methods": {"new": {}, "ppo": {}}, "seeds": 3,
                          "seed": 0, "timesteps": {ENV: 128}, "final_window_percent": "5%"}
    md = summary.render_markdown(report, {})
    assert "1/3 (diverged: 1; no episode: 2)" in md


def _run6(final):
    """A run of six seeds whose final (and mean) returns are `final`."""
    return MethodRun(_metrics([[1.0, 2.0]] * 6, [[1, 1]] * 6), np.asarray(final, np.float64),
                     np.asarray(final, np.float64), np.zeros(6, bool), np.zeros((6, 2), np.uint32), 0, 1.0)


def test_each_env_has_its_own_probability_of_improvement_and_ci():
    """Per env, P(X > Y) and its bootstrap CI are those of that env alone: with one env they are the aggregate's;
    with two, an env where X wins every pair has [1, 1]; eval.md shows each env's CI beside its point."""
    rng = np.random.default_rng(0)
    for _ in range(10):
        x, y = rng.normal(size=6), rng.normal(size=6)
        one = summary.summarise({ENV: {"new": _run6(x), "ppo": _run6(y)}}, {ENV: 64}, {ENV: 0.0}, "new", ["ppo"])
        block = one["aggregate"]["probability_of_improvement"]["new > ppo"]
        assert block["per_env"][ENV] == block["p"] and block["per_env_ci95"][ENV] == block["ci95"]
        lo, hi = block["ci95"]
        assert 0.0 <= lo <= hi <= 1.0
    other = "Acrobot-v1"
    two = summary.summarise({ENV: {"new": _run6(x), "ppo": _run6(y)}, other: {"new": _run6(y + 100), "ppo": _run6(y)}},
                            {ENV: 64, other: 64}, {ENV: 0.0, other: 0.0}, "new", ["ppo"])
    block = two["aggregate"]["probability_of_improvement"]["new > ppo"]
    assert block["per_env"][other] == 1.0 and block["per_env_ci95"][other] == [1.0, 1.0]
    assert block["per_env_ci95"][ENV] == one["aggregate"]["probability_of_improvement"]["new > ppo"]["ci95"]
    two["settings"] = {"objective": "new", "baselines": ["ppo"], "methods": {"new": {}, "ppo": {}}, "seeds": 6,
                       "seed": 0, "timesteps": {ENV: 128, other: 128}, "final_window_percent": "5%"}
    lo, hi = block["per_env_ci95"][ENV]
    assert f"{ENV}: {block['per_env'][ENV]:.2f} [{lo:.2f}, {hi:.2f}], {other}: 1.00 [1.00, 1.00]" in \
        summary.render_markdown(two, {})


def test_a_judge_without_ppo_normalises_by_its_first_baseline():
    """A DQN judge (no PPO among the methods) normalises every score by its first baseline, DQN: for random
    scores, the reference's normalised mean is 1, another method's is (its mean - random) / (DQN's - random)."""
    rng = np.random.default_rng(1)
    for _ in range(10):
        low, x, y = rng.normal(), rng.normal(10, 1, 6), rng.normal(20, 1, 6)
        report = summary.summarise({ENV: {"new": _run6(x), "dqn": _run6(y), "ddqn": _run6(x)}}, {ENV: 64}, {ENV: low},
                                   "new", ["dqn", "ddqn"])
        assert report["aggregate"]["normalization"] == "(score - random policy) / (dqn mean - random policy)"
        assert report["aggregate"]["excluded_envs"] == {}
        norm = report["envs"][ENV]
        np.testing.assert_allclose(np.mean(norm["dqn"]["normalized"]["final_return"]), 1.0)
        np.testing.assert_allclose(np.mean(norm["new"]["normalized"]["final_return"]),
                                   (x.mean() - low) / (y.mean() - low))
    with_ppo = summary.summarise({ENV: {"new": _run6(x), "ppo": _run6(y)}}, {ENV: 64}, {ENV: 0.0}, "new", ["ppo"])
    assert with_ppo["aggregate"]["normalization"].endswith("(ppo mean - random policy)")


def test_eval_md_shows_returns_to_three_significant_figures():
    """A return cell keeps three significant figures of its largest number (at least one decimal): Catch's returns
    near 1 are not all printed 1.0 while their P(X > Y) differ, and -23.5 stays -23.5."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        iqm = float(rng.choice([-1, 1]) * 10.0 ** rng.uniform(-2, 4))
        lo, hi = sorted([iqm - abs(iqm) * rng.uniform(0, 0.1), iqm + abs(iqm) * rng.uniform(0, 0.1)])
        text = summary._iqm_ci({"iqm": iqm, "ci95": [lo, hi]})
        shown = [float(x) for x in re.findall(r"-?\d+\.\d+", text)]
        decimals = {len(x.split(".")[1]) for x in re.findall(r"-?\d+\.\d+", text)}
        assert len(shown) == 3 and len(decimals) == 1 and 1 <= decimals.pop() <= 3, text
        big = max(abs(iqm), abs(lo), abs(hi))
        for value, exact in zip(shown, (iqm, lo, hi), strict=True):
            assert abs(value - exact) <= max(0.5e-2 * big, 0.5e-3) * (1 + 1e-9), (text, exact)
    assert summary._iqm_ci({"iqm": -23.5, "ci95": [-23.9, -23.2]}) == "-23.5 [-23.9, -23.2]"


def test_eval_md_names_each_methods_own_preset():
    """Methods of other algorithms train untuned at their own presets (Disco103's lr 1e-2, PPO's 2.5e-4 on
    Catch): eval.md names each, as the committed Catch judge's report holds them."""
    report = read_report(ROOT / "results" / "disco103_judged" / "catch_cpu" / "eval")
    md = summary.render_markdown(report, {})
    assert ("each method's own preset's values (disco103: Catch-bsuite lr=0.01; ppo: Catch-bsuite lr=0.00025; "
            "dpo: Catch-bsuite lr=0.00025)") in md
    assert "| Catch-bsuite | 58,000 | ppo | 0.995 [0.990, 0.999] |" in md


def test_learning_curve_bins_and_carries_forward():
    returns = np.array([[np.nan, 10.0, np.nan, 30.0]])
    counts = np.array([[0, 1, 0, 3]])
    steps, curve = summary.learning_curve(returns, counts, batch_size=8, max_points=4)
    assert steps.tolist() == [8, 16, 24, 32]
    assert math.isnan(curve[0, 0]) and curve[0, 1:].tolist() == [10.0, 10.0, 30.0]
    steps, curve = summary.learning_curve(returns, counts, batch_size=8, max_points=2)
    assert steps.tolist() == [16, 32] and curve[0].tolist() == [10.0, 30.0]


def run_cli(argv) -> int:
    """main()'s exit status, whether it returns it or argparse raises SystemExit."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.parametrize("argv, message", [
    (["evaluate", "dpo", "--envs", "CartPol-v1"], "unknown env 'CartPol-v1'"),
    (["evaluate", "dpo", "--envs", ENV, "--baselines", "ppo,ddpo"], "unknown objective 'ddpo'"),
    (["evaluate", "dpo", "--envs", ENV, "--seeds", "0"], "--seeds must be a positive integer"),
    (["evaluate", "dpo"], "give --envs"),
    (["evaluate", "ppo", "--envs", ENV, "--baselines", "ppo"], "both called 'ppo'"),
])
def test_bad_input_exits_2_with_one_line(argv, message, tmp_path, capsys):
    assert run_cli([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.strip().count("\n") == 0 and "Traceback" not in err


def test_run_directory_without_objective_or_envs(tmp_path, capsys):
    empty = tmp_path / "run_empty"
    empty.mkdir()
    assert run_cli(["evaluate", str(empty), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "has no objective.msgpack" in err and err.strip().count("\n") == 0
    no_envs = tmp_path / "run_no_envs"
    no_envs.mkdir()
    save_objective(no_envs / "objective.msgpack", BUILTIN_OBJECTIVES["dpo"], BUILTIN_OBJECTIVES["dpo"].zero_meta())
    (no_envs / "config.yaml").write_text("generations: 3\n")
    assert run_cli(["evaluate", str(no_envs), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "has no held_out_envs list" in err and err.strip().count("\n") == 0


def test_label_equals_source_names_a_method(files, tmp_path):
    """Two `distil` outputs are both distilled.msgpack: LABEL=SOURCE tells them apart; a run directory keeps its
    held-out envs under a label; a path that itself contains '=' is still read as a path."""
    from metadisco.core.errors import UserError
    from metadisco.evaluate.methods import held_out_envs, method_from, resolve_methods, without_label

    a, b = tmp_path / "dist_a", tmp_path / "dist_b"
    for d in (a, b):
        d.mkdir()
        save_objective(d / "distilled.msgpack", BUILTIN_OBJECTIVES["dpo"], BUILTIN_OBJECTIVES["dpo"].zero_meta())
    with pytest.raises(UserError, match="both called 'distilled'.*LABEL=SOURCE"):
        resolve_methods("ppo", [str(a / "distilled.msgpack"), str(b / "distilled.msgpack")])
    methods = resolve_methods(f"kept={files['run_dir']}",
                              ["ppo", f"parametric={a / 'distilled.msgpack'}", f"symbolic={b / 'distilled.msgpack'}"])
    assert [m.label for m in methods] == ["kept", "ppo", "parametric", "symbolic"]
    assert methods[2].objective == BUILTIN_OBJECTIVES["dpo"] and methods[0].objective == BUILTIN_OBJECTIVES["dpo"]
    assert method_from("my_ppo=ppo").label == "my_ppo"
    assert held_out_envs(without_label(f"kept={files['run_dir']}")) == [ENV]
    odd = tmp_path / "x=y.msgpack"
    save_objective(odd, BUILTIN_OBJECTIVES["ppo"], BUILTIN_OBJECTIVES["ppo"].zero_meta())
    assert without_label(str(odd)) == str(odd) and method_from(str(odd)).label == "x=y"
    for bad in ("=ppo", "a b=ppo", "kept="):
        with pytest.raises(UserError, match="LABEL=SOURCE"):
            method_from(bad)
    with pytest.raises(UserError, match="unknown objective"):
        method_from("kept=ppp")


def test_random_policy_runs_until_episodes_end():
    """The normalisation's zero point: with chunks shorter than a random CartPole episode (about 22 steps) the
    first chunk ends no episode, and the envs run on until 16 have ended instead of giving NaN; a cap that no
    episode fits in still gives NaN."""
    from metadisco.runs.random_policy import random_policy_return

    short = random_policy_return(ENV, num_steps=5, max_chunks=40)
    assert math.isfinite(short) and 8.0 < short < 40.0  # CartPole: +1 per step, random episodes ~9-40 steps
    assert math.isnan(random_policy_return(ENV, num_steps=5, max_chunks=1))


@pytest.mark.heavy
@pytest.mark.slow  # 33 s on 2 cores
def test_one_env_at_two_budgets_is_two_regimes(files, evaluated, tmp_path):
    """The fixture's methods and seeds, so that the TIMESTEPS regime reuses its two compiled programs (the
    half budget is a program of its own: its number of updates is static)."""
    half, whole = f"{ENV}@{TIMESTEPS // 2}", f"{ENV}@{TIMESTEPS}"
    report, runs = evaluate("dpo", [half, whole], ["ppo", files["ppo_file"]], SEEDS, tmp_path / "two",
                            training=Training(overrides=TINY), show_progress=False)
    assert list(runs) == [half, whole]
    assert report["settings"]["timesteps"] == {half: TIMESTEPS // 2, whole: TIMESTEPS}
    assert runs[whole]["ppo"].curves.episode_return.shape[1] == 2 * runs[half]["ppo"].curves \
        .episode_return.shape[1]
    with pytest.raises(UserError, match="given twice"):
        prepare("dpo", [f"{ENV}@256", f"{ENV}@256"], ["ppo"], 2)
    with pytest.raises(UserError, match="given twice"):
        prepare("dpo", [ENV, f"{ENV}@256"], ["ppo"], 2)


def test_a_run_judged_with_other_settings_than_it_trained_with_is_said(tmp_path, capsys):
    """A run directory whose every task gave the objective num_envs=8 and lr=1e-3 (and one task alone gamma), judged
    at the preset's values: evaluate names the settings every task shared and the --set that restores them; a tuned
    setting is no difference; an objective file or a built-in name has no training record."""
    import shutil

    import yaml

    from metadisco.cli import build_parser
    from metadisco.cli.evaluate_cmd import rules_of, say_unlike_training
    from metadisco.evaluate import prepare, unlike_training

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy("results/objectives/short_long_minatar_talpo.msgpack", run / "objective.msgpack")
    tasks = [{"env": "CartPole-v1", "timesteps": 4096, "train": {"num_envs": 8, "lr": 1e-3, "gamma": 0.9}},
             {"env": "Acrobot-v1", "timesteps": 4096, "train": {"num_envs": 8, "lr": 1e-3}}]
    (run / "config.yaml").write_text(yaml.safe_dump({"tasks": tasks, "held_out_envs": ["Pendulum-v1"]}))
    methods, _, configs = prepare(str(run), ["CartPole-v1"], ["ppo"], 2)
    assert unlike_training(str(run), configs, "ppo") == {"num_envs": (8, {"CartPole-v1": 4}),
                                                          "lr": (1e-3, {"CartPole-v1": 2.5e-4})}
    assert set(unlike_training(str(run), configs, "ppo", ("lr",))) == {"num_envs"}
    _, _, matching = prepare(str(run), ["CartPole-v1"], ["ppo"], 2, training=Training(None, ["num_envs=8", "lr=1e-3"]))
    assert unlike_training(str(run), matching, "ppo") == {}
    assert unlike_training("results/objectives/short_long_minatar_talpo.msgpack", configs, "ppo") == {}
    assert unlike_training("ppo", configs, "ppo") == {}

    args = build_parser().parse_args(["evaluate", f"mine={run}", "--envs", "CartPole-v1", "--baselines", "ppo"])
    say_unlike_training(args, rules_of(args))
    err = capsys.readouterr().err
    assert err == ("mine was meta-trained with lr=0.001 (here 0.00025), num_envs=8 (here 4); judge it as it trained "
                   "with --set lr=0.001 --set num_envs=8\n")  # config.yaml's order (safe_dump sorts the keys)
