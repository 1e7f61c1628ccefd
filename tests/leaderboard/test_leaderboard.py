"""metadisco leaderboard: suites and entries as data, one-line errors, a board trained from cells, and `--add`
reproducing an entry already on the board bit for bit (same keys, same programs, nothing else retrained)."""

import json

import numpy as np
import pytest

from metadisco.cli import main
from metadisco.core.errors import UserError
from metadisco.leaderboard import load_suite, shipped_entries, shipped_suites, suite_entries
from metadisco.leaderboard.suite import suite_from_dict

TINY = """name: tiny
envs: {CartPole-v1: 2048}
entries: [ppo, dpo]
lr_scales: [1.0, 4.0]
selection_seeds: 2
report_seeds: 2
eval_episodes: 2
"""


def run_cli(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = e.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_shipped_suites_name_known_entries_that_can_be_read():
    entries = shipped_entries()
    assert {"cpu", "gpu"} <= set(shipped_suites())
    for name in shipped_suites():
        suite = load_suite(name)
        assert suite.reference == "ppo"
        assert all(e in entries for e in suite.entries)
    for entry in entries.values():  # every shipped source that is not a local file resolves
        if not entry.source.startswith("repo:"):
            from metadisco.evaluate.methods import method_from

            assert method_from(entry.location()).objective is not None


def test_the_grid_is_relative_to_each_preset_lr():
    suite = load_suite("cpu")
    assert suite.grid(2.5e-4) == [float(np.float32(2.5e-4 * s)) for s in (0.5, 1.0, 2.0)]
    assert suite.grid(1e-2)[1] == float(np.float32(1e-2))


@pytest.mark.parametrize("data, message", [
    ({"name": "x", "envs": {"CartPole-v1": 100}}, "give entries"),
    ({"name": "x", "envs": {"CartPole-v2": 100}, "entries": ["ppo"]}, "unknown env 'CartPole-v2'"),
    ({"name": "x", "envs": {"CartPole-v1": 0}, "entries": ["ppo"]}, "env steps must be a positive integer"),
    ({"name": "x", "envs": {"CartPole-v1": 100}, "entries": ["ppo", "ppo"]}, "listed twice"),
    ({"name": "x", "envs": {"CartPole-v1": 100}, "entries": ["ppo"], "lr_scales": [0]}, "lr_scales must be"),
    ({"name": "x", "envs": {"CartPole-v1": 100}, "entries": ["ppo"], "score": "best"}, "unknown score 'best'"),
    ({"name": "x", "envs": {"CartPole-v1": 100}, "entries": ["ppo"], "seeds": 3}, "unknown key 'seeds'"),
    ({"name": "x", "envs": {"CartPole-v1": 100}, "entries": ["ppo"], "eval_episodes": 0, "score": "eval_return"},
     "needs eval_episodes"),
])
def test_a_bad_suite_is_one_line(data, message):
    with pytest.raises(UserError, match=message):
        suite_from_dict(data)


def test_unknown_entries_and_clashing_labels_are_refused():
    with pytest.raises(UserError, match="unknown leaderboard entry 'ppx'"):
        suite_entries(["ppx"])
    with pytest.raises(UserError, match="both called 'dpo'"):
        suite_entries(["ppo", "dpo"], ["dpo=dpo"])


@pytest.mark.parametrize("argv, message", [
    (["leaderboard", "--suite", "cpux", "--dry-run"], "unknown suite 'cpux'"),
    (["leaderboard", "--suite", "cpu"], "give --out DIR, or --dry-run"),
    (["leaderboard", "--suite", "cpu", "--entries", "ppx", "--dry-run"], "'ppx' is not an entry of suite cpu"),
    (["leaderboard", "--suite", "cpu", "--against", "{out}", "--dry-run"], "give --add"),
    (["leaderboard", "--suite", "cpu", "--versus", "dqnx", "--dry-run"], "--versus: 'dqnx' is not an entry"),
    (["leaderboard", "--suite", "cpu", "--add", "mine=missing.msgpack", "--dry-run"], "no objective file"),
    (["leaderboard", "--suite", "cpu", "--add", "mine=dpo", "--against", "{out}", "--dry-run"],
     "holds no leaderboard cells"),
])
def test_bad_command_lines_are_one_line_with_status_2(capsys, tmp_path, argv, message):
    argv = [a.replace("{out}", str(tmp_path)) for a in argv]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_the_dry_run_counts_every_cell_and_marks_what_cannot_run(capsys):
    code, out, err = run_cli(capsys, "leaderboard", "--suite", "cpu", "--dry-run")
    assert code == 0, err
    suite = load_suite("cpu")
    ppo = next(line for line in out.splitlines() if line.strip().startswith("ppo:"))
    cells = len(suite.envs) * (len(suite.lr_scales) + 1)
    assert f"{cells} left" in ppo
    steps = sum(s * (len(suite.lr_scales) * suite.selection_seeds + suite.report_seeds) for _, s in suite.envs)
    assert f"({steps:,} env steps)" in ppo
    dqn = next(line for line in out.splitlines() if line.strip().startswith("dqn:"))
    assert "cannot run Pendulum-v1" in dqn


def _cells(directory) -> dict:
    found = {}
    for path in (directory / "cells").glob("*.json"):
        if path.name != "plan.json":
            cell = json.loads(path.read_text())
            found[cell["key"]] = cell["record"]
    return found


def test_a_board_is_trained_ranked_and_an_added_twin_reproduces_its_row_bit_for_bit(capsys, tmp_path):
    suite_file = tmp_path / "tiny.yaml"
    suite_file.write_text(TINY)
    board = tmp_path / "board"
    code, out, err = run_cli(capsys, "leaderboard", "--suite", str(suite_file), "--out", str(board))
    assert code == 0, err
    report = json.loads((board / "board.json").read_text())
    assert sorted(report["aggregate"]["final_return"]) == ["dpo", "ppo"]
    assert {e["rank"] for e in report["entries"].values()} == {1, 2}
    for name in ("board.md", "aggregate.png", "profiles.png", "improvement.png"):
        assert (board / name).is_file()
    assert "| rank | entry |" in out
    # The reference's normalised scores average 1 over its report seeds (tuned PPO = 1).
    ppo = report["envs"]["CartPole-v1"]["entries"]["ppo"]["scores"]["final_return"]
    assert ppo["finite_seeds"] == 2
    made = _cells(board)
    assert len(made) == 2 * 3  # two entries x (two lrs on selection seeds + the chosen one on report seeds)

    # A rerun trains nothing and writes the same board.
    code, out2, err = run_cli(capsys, "leaderboard", "--suite", str(suite_file), "--out", str(board))
    assert code == 0 and "trained in" not in err, err
    assert json.loads((board / "board.json").read_text()) == report

    # dpo added again under another name against the board: only it trains, and its cells equal dpo's.
    placed = tmp_path / "placed"
    code, out, err = run_cli(capsys, "leaderboard", "--suite", str(suite_file), "--add", "twin=dpo",
                             "--against", str(board), "--out", str(placed))
    assert code == 0, err
    assert "leaderboard: twin" in err and "leaderboard: dpo" not in err and "leaderboard: ppo" not in err
    twin = _cells(placed)
    assert len(twin) == 3 and _cells(board) == made  # the board it was placed against is unchanged
    for key, record in twin.items():
        original = made[key.replace("|twin|", "|dpo|")]
        assert record["run"] == original["run"] | {"seconds": record["run"]["seconds"]}
    placed_report = json.loads((placed / "board.json").read_text())
    assert placed_report["aggregate"]["final_return"]["twin"]["iqm"] == \
        report["aggregate"]["final_return"]["dpo"]["iqm"]
    assert "twin: rank" in err and "P(twin > entry)" in err
    code, out, err = run_cli(capsys, "leaderboard", "--suite", str(suite_file), "--out", str(board), "--versus", "ppo")
    assert code == 0 and "P(dpo > ppo) on final_return: CartPole-v1 " in out and "on eval_return" in out, err
    # Per env, P(row > column) with a CI from the board's file alone: a twin ties its original exactly.
    from metadisco.leaderboard.board import per_env_improvement

    assert per_env_improvement(placed_report, "twin", "dpo")["CartPole-v1"]["p"] == 0.5
    assert set(per_env_improvement(placed_report, "dpo", "ppo", "eval_return")) == {"CartPole-v1"}
