"""Population-based training: the strategies' invariants on many random inputs, a copy takes its parent's whole
agent, PBT without exploitation is independent runs bit for bit, the run directory, and SIGKILL then --resume
ends byte-identical to an uninterrupted run."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
import yaml
from processes import TIMEOUT, kill_at_random_point, line_count, start_metadisco
from tiny_train import TINY

from metadisco.core.errors import UserError
from metadisco.core.schema import from_plain, with_overrides
from metadisco.search.pbt import strategies
from metadisco.search.pbt.config import PBTConfig
from metadisco.search.pbt.run import PBT, ancestry, run_pbt, take_rows
from metadisco.trainers.hyper import row
from metadisco.trainers.hyper_space import Dimension

TRAIN = {"num_envs": 4, "num_steps": 16, "update_epochs": 2, "num_minibatches": 2, "hidden_sizes": [8, 8]}
CONFIG = {"env": "CartPole-v1", "population": 4, "timesteps": 4 * 16 * 6, "seed": 3, "train": TRAIN,
          "space": {"lr": {"low": 1e-4, "high": 1e-1}, "ent_coef": {"low": 0.0, "high": 0.05}},
          "ready": {"kind": "every", "updates": 2}, "exploit": {"kind": "truncation", "fraction": 0.25},
          "explore": {"kind": "perturb", "factors": [0.8, 1.2], "resample_probability": 0.25}}


def pbt_config(data=None, *overrides) -> PBTConfig:
    return from_plain(PBTConfig, with_overrides(data or CONFIG, list(overrides), "PBT"))


# ---------------------------------------------------------------------------------------------------------
# strategies


def test_truncation_invariants_on_random_scores():
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(1, 24))
        fraction = float(rng.choice([0.1, 0.2, 0.25, 0.5]))
        scores = rng.normal(size=n)
        scores[rng.uniform(size=n) < 0.15] = np.nan  # no episode finished: ranks last
        parents = strategies.truncation(np.random.default_rng(trial), scores, fraction)
        ranked = strategies.rank_scores(scores)
        order = np.argsort(-ranked, kind="stable")
        cut = min(max(int(fraction * n), 1), n // 2) if n >= 2 else 0
        moved = np.flatnonzero(parents != np.arange(n))
        assert set(moved) == set(order[n - cut:])  # exactly the bottom cut copy ...
        assert set(parents[moved]) <= set(order[:cut])  # ... from the top cut
        assert (parents[parents] == parents).all()  # a parent is never itself replaced


def test_explore_invariants_on_random_values():
    space = (Dimension("lr", 1e-4, 1e-1, True), Dimension("ent_coef", 0.0, 0.05, False))
    rng = np.random.default_rng(1)
    for trial in range(200):
        n = int(rng.integers(1, 16))
        values = {d.name: d.from_unit(rng.uniform(size=n)) for d in space}
        copied = rng.uniform(size=n) < 0.5
        p = float(rng.choice([0.0, 0.25, 1.0]))
        out = strategies.explore("perturb", np.random.default_rng(trial), values, copied, space, (0.8, 1.2), p)
        for d in space:
            new, old = out[d.name], values[d.name]
            np.testing.assert_array_equal(new[~copied], old[~copied])  # who did not copy keeps its settings
            assert (new >= d.low - 1e-15).all() and (new <= d.high + 1e-15).all()
            if p == 0.0:  # perturbed only: x 0.8 or x 1.2, then clipped into the range
                options = np.stack([d.clip(old * 0.8), d.clip(old * 1.2)])
                assert np.isclose(new[copied], options[:, copied]).any(axis=0).all()
        kept = strategies.explore("none", np.random.default_rng(trial), values, copied, space, (0.8, 1.2), p)
        for d in space:
            np.testing.assert_array_equal(kept[d.name], values[d.name])


# ---------------------------------------------------------------------------------------------------------
# the loop


def test_copy_takes_the_parents_agent_but_not_its_key():
    pbt = PBT(pbt_config())
    state = pbt.init()
    parents = np.array([0, 0, 2, 1])
    new = take_rows(state, parents, {"lr": np.array([1e-3, 2e-3, 3e-3, 4e-3])})
    for a, b in zip(jax.tree.leaves(new.params), jax.tree.leaves(state.params), strict=True):
        np.testing.assert_array_equal(a, b[parents])
    np.testing.assert_array_equal(new.key, state.key)  # each agent keeps its own randomness
    np.testing.assert_allclose(new.hyper.lr, [1e-3, 2e-3, 3e-3, 4e-3], rtol=1e-6)
    np.testing.assert_array_equal(new.hyper.ent_coef, state.hyper.ent_coef[parents])


@pytest.mark.slow  # 24 s on 2 cores
def test_without_exploitation_agents_are_independent_runs():
    """exploit: none is a random search: each agent equals `train` with its own settings, bit for bit (one agent
    per device of the 4, so no agent is batched with another)."""
    cfg = pbt_config(None, "exploit.kind=none")
    pbt = PBT(cfg)
    result = run_pbt(cfg, None)
    assert all(line["parents"] == [0, 1, 2, 3] for line in result.lines)
    from metadisco.envs import make_env
    from metadisco.objectives import BUILTIN_OBJECTIVES
    from metadisco.runs.seeds import seed_keys
    from metadisco.search.pbt.run import round_scores
    from metadisco.trainers import make_trainer
    from metadisco.trainers.hyper import static_of

    ppo = BUILTIN_OBJECTIVES["ppo"]
    train = jax.jit(make_trainer(static_of(TINY), make_env("CartPole-v1"), ppo).train)
    keys = seed_keys(4, cfg.seed)
    for a in range(4):
        hyper = type(pbt.initial_hypers)(**{k: np.float32(v) for k, v in row(pbt.initial_hypers, a).items()})
        metrics = train(keys[a], ppo.zero_meta(), hyper).metrics
        for r in range(3):
            window = jax.tree.map(lambda x, r=r: np.asarray(x)[None, 2 * r:2 * r + 2], metrics)
            expected = round_scores(window)[0]
            got = result.lines[r]["scores"][a]
            assert (got is None and np.isnan(expected)) or got == expected


def test_run_directory(tmp_path):
    result = run_pbt(pbt_config(), tmp_path)
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [x["round"] for x in lines] == [1, 2, 3] and result.rounds == 3
    lineage = json.loads((tmp_path / "lineage.json").read_text())
    assert lineage["parents"][-1] == [0, 1, 2, 3]  # no exploitation after the last round
    assert any(p != list(range(4)) for p in lineage["parents"][:-1])  # truncation copied someone
    for r, parents in enumerate(lineage["parents"][:-1]):  # a copy trains the next round with explored settings
        for agent, parent in enumerate(parents):
            if parent == agent:
                assert lineage["hyper"]["lr"][r + 1][agent] == pytest.approx(lineage["hyper"]["lr"][r][agent])
    summary = json.loads((tmp_path / "summary.json").read_text())
    path = ancestry(lineage, summary["best_agent"])
    assert len(path) == 3 and path[-1] == summary["best_agent"]
    assert summary["best_schedule"]["lr"] == [lineage["hyper"]["lr"][r][a] for r, a in enumerate(path)]
    assert (tmp_path / "pbt.png").read_bytes()[:4] == b"\x89PNG"
    written = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert written["population"] == 4 and next(iter(written)) == "schema"
    with pytest.raises(UserError, match="not empty"):
        run_pbt(pbt_config(), tmp_path)
    # A run directory of the version before config.yaml had a schema resumes (here: is found finished) ...
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({k: v for k, v in written.items() if k != "schema"},
                                                         sort_keys=False, default_flow_style=None))
    again = run_pbt(pbt_config(), tmp_path, resume=True)
    np.testing.assert_array_equal(again.scores, result.scores)
    # ... and another config does not
    with pytest.raises(UserError, match="the config differs"):
        run_pbt(pbt_config(None, "seed=4"), tmp_path, resume=True)


@pytest.mark.parametrize("overrides, message", [
    (["ready.updates=4"], "ready.updates 4 must divide the 6 updates"),
    (["ready.kind=sometimes"], "unknown ready strategy 'sometimes'"),
    (["exploit.kind=tournament"], "unknown exploit strategy 'tournament'"),
    (["exploit.fraction=0.7"], "exploit.fraction must be"),
    (["explore.factors=[]"], "explore.factors is empty"),
    (["explore.factors=[0.8, -1]"], "explore.factors.1 must be"),
    (["space.num_envs=[4, 8]"], "num_envs fixes the shape"),
    (["population=0"], r"population must be an integer in \[1, "),
])
def test_bad_pbt_configs(overrides, message):
    with pytest.raises(UserError, match=message):
        pbt_config(None, *overrides).resolve()


# ---------------------------------------------------------------------------------------------------------
# SIGKILL, then --resume


def _without_seconds(path) -> list[dict]:
    return [{k: v for k, v in json.loads(x).items() if k != "seconds"} for x in path.read_text().splitlines()]


@pytest.mark.heavy
@pytest.mark.slow  # 66 s on 2 cores
def test_sigkill_then_resume_is_byte_identical(tmp_path):
    config = {**CONFIG, "timesteps": 4 * 16 * 40, "ready": {"kind": "every", "updates": 1}}
    config_path = tmp_path / "pbt.yaml"
    config_path.write_text(yaml.safe_dump(config))
    reference, run = tmp_path / "reference", tmp_path / "run"

    def cli(out, *extra):
        return start_metadisco(["pbt", str(config_path), "--out", str(out), *extra])

    _, err = (proc := cli(reference)).communicate(timeout=TIMEOUT)  # uninterrupted
    assert proc.returncode == 0, err[-2000:]
    proc = cli(run)
    kill_at_random_point(proc, run / "metrics.jsonl", 20, 0.02)
    assert line_count(run / "metrics.jsonl") < 40

    proc = cli(run, "--resume")
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err[-2000:]
    for name in ("lineage.json", "summary.json", "checkpoints/gen_000040.msgpack", "pbt.png"):
        assert (run / name).read_bytes() == (reference / name).read_bytes(), name
    assert _without_seconds(run / "metrics.jsonl") == _without_seconds(reference / "metrics.jsonl")


# ---------------------------------------------------------------------------------------------------------
# the command line: bad input is one line and status 2, before any work


@pytest.mark.parametrize("command, overrides, message", [
    ("pbt", ["ready.updates=5"], "ready.updates 5 must divide"),
    ("pbt", ["space.lr.low=.nan"], "space.lr.low must be a finite"),
    ("pbt", ["explore.kind=jitter"], "unknown explore strategy 'jitter'"),
    ("sweep", ["space.lr=[0.001, .inf]"], "space.lr.1 must be a finite"),
    ("sweep", ["search=bayes"], "search must be one of grid, random"),
    ("sweep", ["train.num_envs=0"], "train: num_envs must be a positive integer"),
    ("sweep", ["space.gamma={low: 0.9, high: 1.5}"], "space: gamma must be"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, capsys, command, overrides, message):
    from metadisco.cli import main

    config = CONFIG if command == "pbt" else {k: v for k, v in CONFIG.items()
                                             if k in ("env", "timesteps", "seed", "train", "space")}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    sets = [x for o in overrides for x in ("--set", o)]
    assert main([command, str(path), *sets, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.slow  # 15 s on 2 cores
def test_dry_run_plans_the_rounds_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from metadisco.cli import main
    from metadisco.parallel import cost, sharding

    cfg = pbt_config()
    pbt = PBT(cfg)
    init, step = pbt.plan()
    assert step.calls == pbt.rounds == 6 // 2 and step.env_steps == 4 * 16 * 6 * 4  # every agent's steps
    assert init.env_steps == 0
    state = pbt.init()
    args = sharding.place((state,), pbt.devices, (0,))
    compiled = pbt._step.lower(*args).compile()
    assert step.memory == cost.memory(compiled)
    per_round = cost.jaxpr_cost(jax.make_jaxpr(pbt._step)(*args), compiled).flops * len(pbt.devices)
    assert step.cost.flops == pytest.approx(pbt.rounds * per_round)
    path = tmp_path / "pbt.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    monkeypatch.chdir(tmp_path)
    assert main(["pbt", str(path), "--dry-run"]) == 0
    assert "whole run: 1,536 env steps" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pbt.yaml"]
