"""`metadisco sweep`: points x seeds in one compiled call, each point the run `train` gives with its settings,
the statistics and files, and one-line errors for bad sweep configs."""

from __future__ import annotations

import json
from dataclasses import replace

import jax
import numpy as np
import pytest
import yaml
from tiny_train import TINY, CompileCounter

from metadisco.cli import main
from metadisco.core.errors import UserError
from metadisco.core.schema import from_plain, with_overrides
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.runs.seeds import train_seeds
from metadisco.search.sweep import SweepConfig, run_sweep

TRAIN = {"num_envs": 4, "num_steps": 16, "update_epochs": 2, "num_minibatches": 2, "hidden_sizes": [8, 8]}
CONFIG = {"env": "CartPole-v1", "search": "grid", "num": 3, "seeds": 2, "timesteps": 384, "train": TRAIN,
          "space": {"lr": {"low": 1e-4, "high": 1e-2}}}


def sweep_config(**changes) -> SweepConfig:
    return from_plain(SweepConfig, with_overrides({**CONFIG, **changes}, [], "sweep"))


@pytest.mark.heavy
@pytest.mark.slow  # 31 s on 2 cores
def test_one_compiled_call_and_each_point_is_its_own_run():
    counter = CompileCounter()
    with counter:
        result = run_sweep(sweep_config())
    assert counter.names.count("runs_on_device") == 1  # every point and seed: one sharded program
    assert [p["lr"] for p in result.points] == pytest.approx([1e-4, 1e-3, 1e-2])
    assert result.final_return.shape == (3, 2) and result.metrics.episode_return.shape == (3, 2, TINY.num_updates)
    assert not np.array_equal(result.metrics.episode_return[0], result.metrics.episode_return[2], equal_nan=True)
    ppo = BUILTIN_OBJECTIVES["ppo"]
    for p, point in enumerate(result.points):  # the same seed keys as `train --seeds 2 --set lr=...`
        alone = train_seeds("CartPole-v1", ppo, ppo.zero_meta(), replace(TINY, lr=point["lr"]), 2)
        np.testing.assert_allclose(result.metrics.episode_return[p], alone.metrics.episode_return, rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_array_equal(result.metrics.episode_count[p], alone.metrics.episode_count)


def test_random_search_is_seeded_and_log_uniform():
    a = sweep_config(search="random", num=5).resolve()[2]
    assert a == sweep_config(search="random", num=5).resolve()[2]
    assert a != sweep_config(search="random", num=5, seed=1).resolve()[2]
    assert all(1e-4 <= p["lr"] <= 1e-2 for p in a)


def test_cli_writes_statistics_table_and_figure(tmp_path):
    config = tmp_path / "sweep.yaml"
    # 2 random points x 3 seeds: the 6 runs of test_one_compiled_call_and_each_point_is_its_own_run, so the same
    # compiled program (every hyperparameter is traced), not another compilation.
    config.write_text(yaml.safe_dump({**CONFIG, "space": {"lr": [1e-3, 1e-2], "ent_coef": {"low": 0.0,
                                                                                          "high": 0.02}},
                                      "search": "random", "num": 2}))
    assert main(["sweep", str(config), "--out", str(tmp_path / "out"), "--set", "seeds=3"]) == 0
    summary = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert len(summary["points"]) == 2 and summary["seeds"] == 3 and summary["compiled_calls"] == 1
    for point in summary["points"]:
        scores = np.asarray(point["final_return"], float)
        assert len(scores) == 3
        if point["iqm"] is not None:
            assert point["ci95"][0] <= point["iqm"] <= point["ci95"][1]
            assert np.nanmin(scores) <= point["iqm"] <= np.nanmax(scores)
    best = summary["points"][summary["best"]["index"]]
    assert best["iqm"] == max(p["iqm"] for p in summary["points"] if p["iqm"] is not None)
    assert "**best**" in (tmp_path / "out" / "sweep.md").read_text()
    assert (tmp_path / "out" / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert yaml.safe_load((tmp_path / "out" / "config.yaml").read_text())["seeds"] == 3


@pytest.mark.parametrize("changes, message", [
    ({"search": "bayes"}, "search must be one of grid, random"),
    ({"space": {"lr": {"low": 1e-4, "high": 1e-2}, "num_envs": [4, 8]}}, "num_envs fixes the shape"),
    ({"space": "lr"}, "space must be a mapping"),
    ({"num": 0}, r"num must be an integer in \[1, "),
    ({"env": "CartPole-v9"}, "CartPole-v9"),
    ({"train": {**TRAIN, "lr": -1}}, "train: lr must be positive"),
    ({"budget": 3}, "unknown config key 'budget'"),
])
def test_bad_sweep_configs(changes, message):
    with pytest.raises(UserError, match=message):
        sweep_config(**changes).resolve()


@pytest.mark.slow  # 16 s on 2 cores
def test_dry_run_plans_the_one_call_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from metadisco.parallel import cost
    from metadisco.search.sweep import plan_sweep, sweep_program

    cfg = sweep_config()
    [call] = plan_sweep(cfg)
    fn, args, runs, config, _, _ = sweep_program(cfg)
    compiled = fn.lower(*args).compile()
    assert runs == 6 and call.env_steps == 6 * 384 and call.memory == cost.memory(compiled)
    used = len(jax.tree.leaves(args[0])[0].sharding.device_set)
    assert call.cost.flops == pytest.approx(used * cost.jaxpr_cost(jax.make_jaxpr(fn)(*args), compiled).flops)
    # the plan's env steps are what the sweep trains (sweep.json's env_steps)
    config_file = tmp_path / "sweep.yaml"
    config_file.write_text(yaml.safe_dump(CONFIG))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(config_file), "--dry-run", "--accelerator", "T4"]) == 0
    out = capsys.readouterr().out
    assert "whole sweep: 2,304 env steps" in out and "ESTIMATE for one T4" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]
    assert main(["sweep", str(config_file)]) == 2 and "give --out DIR" in capsys.readouterr().err


@pytest.mark.slow  # 12 s on 2 cores
def test_a_chunked_sweep_resumes_to_the_uninterrupted_files(tmp_path, capsys):
    """`chunk: 1`: one call and one cell per point; a sweep that died after some (cells removed, report gone)
    resumes with --resume, trains only what is missing and writes the uninterrupted sweep.json (timings aside)."""
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "chunk": 1}))
    out = tmp_path / "out"
    argv = ["sweep", str(config), "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    said = capsys.readouterr().err
    timeless = lambda s: {k: v for k, v in s.items() if k not in ("seconds", "steps_per_second")}  # noqa: E731
    whole = json.loads((out / "sweep.json").read_text())
    assert whole["compiled_calls"] == len(whole["points"])
    assert f"{len(whole['points'])} compiled calls of 1 point(s)" in said  # what it said is what it did
    cells = sorted(p for p in (out / "cells").glob("*.json") if p.name != "plan.json")
    assert len(cells) == len(whole["points"])
    cells[0].unlink()
    (out / "sweep.json").unlink()
    capsys.readouterr()
    assert main(argv) == 2 and "--resume" in capsys.readouterr().err
    assert main([*argv, "--resume", "--set", "seeds=3"]) == 2 and "seeds: 2 -> 3" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0
    assert timeless(json.loads((out / "sweep.json").read_text())) == timeless(whole)


@pytest.mark.slow  # 27 s on 2 cores
def test_eval_return_score_ranks_deterministic_episodes(tmp_path):
    """`score: eval_return` with `train: {eval_episodes: N}`: each point's per-seed deterministic-episode returns
    are those `train --set eval_episodes=N` plays with its settings, and the statistics and best point rank them;
    without eval_episodes the score is refused in one line."""
    train = {**TRAIN, "eval_episodes": 3}
    cfg = sweep_config(train=train, score="eval_return", num=2)
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump(cfg.to_plain()))
    assert main(["sweep", str(config), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert summary["score"] == "eval_return"
    ppo = BUILTIN_OBJECTIVES["ppo"]
    for point in summary["points"]:
        alone = train_seeds("CartPole-v1", ppo, ppo.zero_meta(), replace(TINY, lr=point["hyper"]["lr"],
                                                                         eval_episodes=3), 2)
        played = np.asarray(alone.metrics.eval_return)[:, -1]
        np.testing.assert_allclose(point["eval_return"], played, rtol=1e-4)
        assert point["mean"] == pytest.approx(float(np.mean(played)), rel=1e-4)
        assert len(point["final_return"]) == 2
    best = summary["points"][summary["best"]["index"]]
    assert best["iqm"] == max(p["iqm"] for p in summary["points"])
    assert "deterministic episodes" in (tmp_path / "out" / "sweep.md").read_text()
    with pytest.raises(UserError, match="score eval_return needs deterministic episodes"):
        sweep_config(score="eval_return").resolve()
    with pytest.raises(UserError, match="score must be one of final_return, eval_return"):
        sweep_config(score="auc").resolve()


def test_a_committed_sweep_still_resumes():
    """results/open/cpu_asterix_1e7's Adam sweep: its stored plan, read through `upgrade_records` as `--resume`
    reads it, equals what the sweep would store now, so its finished learning rates are not run again."""
    from pathlib import Path

    from metadisco.cli.sweep_cmd import plan_settings
    from metadisco.core.cells import first_difference
    from metadisco.core.io import read_json, read_yaml
    from metadisco.runs.migrate import upgrade_records

    here = Path(__file__).resolve().parents[2] / "results/open/cpu_asterix_1e7"
    stored = read_json(here / "adam/cells/plan.json")["settings"]
    cfg = from_plain(SweepConfig, read_yaml(here / "adam_sweep.yaml"))
    now = json.loads(json.dumps(plan_settings(cfg, stored["devices"])))
    assert first_difference(upgrade_records(stored), now) is None
