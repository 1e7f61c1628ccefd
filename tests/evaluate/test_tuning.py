"""`metadisco evaluate --tune / --score eval_return / --resume`: tuned baselines, deterministic episodes, cells.

One tiny CartPole config throughout (the compiled programs are shared by the module's evaluations).
"""

import json
import math
import re

import jax
import numpy as np
import pytest

from metadisco.cli import main
from metadisco.cli.common import SETTING_FLAGS
from metadisco.cli.evaluate_cmd import SCORE_CHOICES, TUNE_RULE_CHOICES
from metadisco.core.cells import COMPRESS_ABOVE, CellStore, pack_array, unpack_array
from metadisco.core.errors import SettingError, UserError
from metadisco.evaluate import Rules, Training, evaluate, selection_keys
from metadisco.evaluate.rules import SCORES, TUNE_RULES, chosen_point, parse_tune
from metadisco.runs.seeds import seed_keys

ENV = "CartPole-v1"
SEEDS = 3
TINY = ["num_envs=4", "num_steps=16", "hidden_sizes=8,8", "update_epochs=1", "num_minibatches=1"]
TIMESTEPS = 16 * 64
GRID = (2.5e-4, 3e-3)  # the preset's 2.5e-4 and one more


def _strip_times(report: dict) -> dict:
    """eval.json without wall times (they differ from run to run; nothing else may)."""
    for entries in report["envs"].values():
        for entry in entries.values():
            entry.pop("call_seconds", None)
    return report


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """dpo against ppo with the learning rate tuned, both rules, deterministic episodes scored."""
    out = {}
    for rule in TUNE_RULES:
        directory = tmp_path_factory.mktemp(f"tuned_{rule}")
        rules = Rules("eval_return", 4, (("lr", GRID),), rule)
        report, runs = evaluate("dpo", [ENV], ["ppo"], SEEDS, directory, training=Training(TIMESTEPS, TINY),
                                show_progress=False, rules=rules)
        out[rule] = (report, runs, directory)
    return out


def test_cli_choices_are_the_library_s():
    assert SCORE_CHOICES == SCORES and TUNE_RULE_CHOICES == TUNE_RULES


def test_parse_tune_and_grid():
    assert parse_tune("lr=1e-3, 2.5e-3") == ("lr", (1e-3, 2.5e-3))
    for bad in ("lr", "=1,2", "lr=", "lr=1,x"):
        with pytest.raises(SettingError, match=r"^tune ") as caught:  # the library's name; the CLI says --tune
            parse_tune(bad)
        assert caught.value.for_flags(SETTING_FLAGS).startswith("--tune ")
    rules = Rules(tune=(("lr", (1.0, 2.0)), ("gamma", (0.9, 0.99, 0.999))))
    assert len(rules.grid()) == 6 and rules.grid()[1] == {"lr": 1.0, "gamma": 0.99}
    with pytest.raises(UserError, match="repeats"):
        Rules(tune=(("lr", (1.0, 1.0)),))
    with pytest.raises(UserError, match="twice"):
        Rules(tune=(("lr", (1.0,)), ("lr", (2.0,))))
    assert Rules("eval_return").eval_episodes == 16  # DiscoBench's count unless told


def test_chosen_point_prefers_scored_seeds_then_the_mean():
    rng = np.random.default_rng(0)
    for _ in range(200):
        scores = rng.normal(size=(5, 4))
        scores[rng.random((5, 4)) < 0.2] = np.nan
        best = chosen_point(list(scores))
        counts = np.isfinite(scores).sum(axis=1)
        assert counts[best] == counts.max()
        means = [float(np.mean(s[np.isfinite(s)])) if np.isfinite(s).any() else -np.inf for s in scores]
        assert means[best] == max(m for m, c in zip(means, counts, strict=True) if c == counts.max())
    assert chosen_point([np.full(4, np.nan), np.full(4, np.nan)]) == 0  # none scored: the grid's first point


def test_packed_arrays_come_back_bit_for_bit():
    rng = np.random.default_rng(1)
    forms = set()
    for dtype in (np.float32, np.float64, np.int32, np.uint32, np.bool_):
        for _ in range(20):
            shape = tuple(rng.integers(0, 5, size=rng.integers(0, 4)))
            if rng.random() < 0.3:  # a learning curve's size: compressed
                shape = (int(rng.integers(1, 17)), int(rng.integers(1200, 3000)))
            x = (rng.normal(size=shape) * 1e3).astype(dtype)
            if dtype == np.float32 and x.size:
                x.flat[0] = np.nan
                x.flat[rng.random(x.size) < 0.8] = np.nan  # most updates finish no episode
            packed = pack_array(x)
            forms.add("zlib" if "zlib" in packed else "base64")
            assert ("zlib" in packed) == (x.nbytes > COMPRESS_ABOVE)
            back = unpack_array(json.loads(json.dumps(packed)))
            assert back.dtype == x.dtype and back.shape == x.shape
            assert back.tobytes() == x.tobytes()
    assert forms == {"zlib", "base64"}


def test_cell_store_refuses_overwriting_and_changed_settings(tmp_path):
    cells = tmp_path / "cells"
    store = CellStore(cells, {"seeds": 3, "lr": [1.0]}, resume=False, command="evaluate")
    store.put("a", {"x": 1})
    with pytest.raises(UserError, match="already holds the cells.*; give resume to finish it"):
        CellStore(cells, {"seeds": 3, "lr": [1.0]}, resume=False, command="evaluate")
    with pytest.raises(UserError, match=r"seeds: 3 -> 4"):
        CellStore(cells, {"seeds": 4, "lr": [1.0]}, resume=True, command="evaluate")
    again = CellStore(cells, {"seeds": 3, "lr": [1.0]}, resume=True, command="evaluate")
    assert again.get("a") == {"x": 1} and "b" not in again
    (cells / CellStore.file_name("a")).write_text("{\"key\": \"a\"")
    with pytest.raises(UserError, match="damaged JSON file"):
        CellStore(cells, {"seeds": 3, "lr": [1.0]}, resume=True, command="evaluate")


@pytest.mark.heavy
@pytest.mark.slow  # 31 s on 2 cores
def test_reported_runs_are_the_chosen_cells(tuned):
    for rule, (report, runs, _) in tuned.items():
        for label in ("dpo", "ppo"):
            entry = report["envs"][ENV][label]
            tuning = entry["tuning"]
            means = [p["mean"] for p in tuning["selection"]]
            counts = [p["scored_seeds"] for p in tuning["selection"]]
            best = max(range(len(GRID)), key=lambda i: (counts[i], -math.inf if means[i] is None else means[i], -i))
            assert tuning["chosen"] == {"lr": GRID[best]}, (rule, label)
            # Reported seeds are always the scoring keys, whatever the rule.
            np.testing.assert_array_equal(runs[ENV][label].key_data,
                                          np.asarray(jax.random.key_data(seed_keys(SEEDS, 0))))
            assert len(entry["eval_return"]) == SEEDS and entry["score"] == "eval_return"
            assert all(x is not None and x >= 1 for x in entry["eval_return"])  # CartPole: >= 1 per episode
            if rule == "same_seeds":  # chosen and reported on the same seeds: the reported mean is the best one
                assert entry["mean"] == pytest.approx(means[best])
        assert report["settings"]["tuning"]["rule"] == rule
        assert set(report["aggregate"]["untuned_probability_of_improvement"]) == {"dpo > ppo"}
        assert set(report["aggregate"]["probability_of_improvement_by_score"]) == set(SCORES)


def test_the_preset_point_is_the_untuned_run(tuned):
    """The grid holds the preset's lr: tuned there, a method's cell is its untuned cell (one cell, one key)."""
    report, _, directory = tuned["same_seeds"]
    cells = [json.loads(p.read_text()) for p in (directory / "cells").glob("*.json") if p.name != "plan.json"]
    keys = sorted(c["key"] for c in cells)
    # 2 methods x 2 points on the scoring seeds; the preset point (2.5e-4) is shared with the untuned run.
    assert len(keys) == 4, keys
    for label in ("dpo", "ppo"):
        untuned = report["envs"][ENV][label]["tuning"]["untuned"]
        at_preset = report["envs"][ENV][label]["tuning"]["selection"][0]
        assert untuned["mean"] == pytest.approx(at_preset["mean"])


def test_fresh_seeds_choose_on_selection_keys(tuned):
    report, _, directory = tuned["fresh_seeds"]
    selection = np.asarray(jax.random.key_data(selection_keys(SEEDS, 0)))
    scoring = np.asarray(jax.random.key_data(seed_keys(SEEDS, 0)))
    assert not np.any(np.all(selection[:, None] == scoring[None], axis=-1))  # disjoint seed sets
    np.testing.assert_array_equal(np.asarray(report["settings"]["tuning"]["selection_seed_keys"]), selection)
    cells = [json.loads(p.read_text())["key"] for p in (directory / "cells").glob("*.json") if p.name != "plan.json"]
    assert sum("|select|" in k for k in cells) == 4  # every method at every point on the selection seeds


def test_resume_finishes_what_is_missing_and_writes_the_same_report(tuned, tmp_path, capsys):
    """A run that died after some cells (its later cells and its report removed), resumed, writes what an
    uninterrupted run wrote; a resume with another command line, or a fresh run into it, is refused. With stderr a
    file (capsys), evaluate writes one line per call it trains, unless --no-progress."""
    argv = ["evaluate", "dpo", "--envs", ENV, "--baselines", "ppo", "--seeds", str(SEEDS), "--timesteps",
            str(TIMESTEPS), "--score", "eval_return", "--eval-episodes", "4", "--tune", f"lr={GRID[0]},{GRID[1]}",
            "--no-progress", *[x for kv in TINY for x in ("--set", kv)]]
    out = tmp_path / "eval"
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 0
    assert "evaluate: call" not in capsys.readouterr().err
    whole = _strip_times(json.loads((out / "eval.json").read_text()))
    assert whole == _strip_times(json.loads((tuned["fresh_seeds"][2] / "eval.json").read_text()))
    cells = sorted(p for p in (out / "cells").glob("*.json") if p.name != "plan.json")
    missing = set()
    for path in cells[::2]:
        missing.add(json.loads(path.read_text())["key"])  # dpo and ppo train in calls of their own
        path.unlink()
    (out / "eval.json").unlink()
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main([*argv, "--out", str(out), "--resume", "--seeds", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert "seeds: 3 -> 4" in err and len(err.splitlines()) == 1
    assert main([*[a for a in argv if a != "--no-progress"], "--out", str(out), "--resume"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("evaluate: call")]
    assert len(lines) == len(missing)
    line_form = rf"evaluate: call \d+/11 trained in \d+ s: {ENV}: (dpo|ppo) \(\w+ seeds, lr=.*\)"
    assert all(re.fullmatch(line_form, line) for line in lines)
    assert _strip_times(json.loads((out / "eval.json").read_text())) == whole
    assert len([p for p in (out / "cells").glob("*.json") if p.name != "plan.json"]) == len(cells)


def test_nothing_scored_only_when_no_point_scored_any_seed():
    from metadisco.evaluate.summary import nothing_scored

    def record(*scored):
        return {"selection": [{"point": {"lr": 1e-3 * (i + 1)}, "mean": None if n == 0 else 1.0, "scored_seeds": n}
                              for i, n in enumerate(scored)]}

    assert nothing_scored(record(0, 0, 0))
    assert not nothing_scored(record(0, 1, 0)) and not nothing_scored(record(3, 3))


@pytest.mark.heavy
@pytest.mark.slow  # 45 s on 2 cores
def test_a_grid_where_no_episode_ends_says_its_choice_is_none(tmp_path, capsys):
    """Freeway's episodes last 2,500 steps: at 32 steps per env none ends in training, the final return is undefined
    at every grid point, and the tuned "choice" is the grid's first. evaluate says so, in its log and in eval.md."""
    out = tmp_path / "fw"
    assert main(["evaluate", "dpo", "--envs", "Freeway-MinAtar", "--baselines", "ppo", "--seeds", "2",
                 "--timesteps", "128", "--tune", "lr=1e-3,3e-3", "--no-progress", "--out", str(out),
                 *[x for kv in TINY for x in ("--set", kv)]]) == 0
    err = capsys.readouterr().err
    assert "no grid point scored a finite final_return for dpo, ppo" in err
    report = json.loads((out / "eval.json").read_text())
    assert all(p["scored_seeds"] == 0 for e in report["envs"]["Freeway-MinAtar"].values()
               for p in e["tuning"]["selection"])
    assert (out / "eval.md").read_text().count("no point scored: the grid's first, not a choice") == 2
