"""Every command that does long work takes the same common options, and every command that draws seeds takes
`--seed`: the `--help` of each command is walked for them. Also: `--no-progress` and `--seed` reach the run."""

import io
import sys
from contextlib import redirect_stdout

import pytest

from metadisco.cli import COMMANDS, build_parser
from metadisco.cli.common import show_progress

LONG_WORK = ("train", "meta-train", "probe", "bench", "evaluate", "distil", "sweep", "pbt", "leaderboard")
COMMON = ("--no-progress", "--devices", "--no-compile-cache", "--plugin")
SEEDED = ("train", "meta-train", "probe", "evaluate", "distil", "sweep", "pbt")
SHARDED = ("meta-train", "probe", "evaluate", "sweep", "pbt")  # work sharded over the one mesh: --distributed


def help_text(command: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit) as stop:
        build_parser().parse_args([command, "--help"])
    assert stop.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_that_works_long_takes_the_common_options(command):
    text = help_text(command)
    wanted = ((COMMON if command in LONG_WORK else ()) + (("--seed",) if command in SEEDED else ())
              + (("--distributed",) if command in SHARDED else ()))
    assert [option for option in wanted if option not in text] == []


def test_the_lists_cover_every_long_command():
    assert set(LONG_WORK) | {"envs", "plot", "report", "inspect", "export", "import", "catalogue"} == set(COMMANDS)


@pytest.mark.parametrize("argv", [["meta-train", "c.yaml", "--out", "o", "--no-progress"],
                                  ["--no-progress", "meta-train", "c.yaml", "--out", "o"]])
def test_no_progress_before_or_after_the_command(argv):
    assert build_parser().parse_args(argv).progress is False


def test_progress_is_off_when_stderr_is_not_a_terminal(monkeypatch):
    args = build_parser().parse_args(["meta-train", "c.yaml", "--out", "o"])
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a file, not a terminal
    assert args.progress is True and show_progress(args) is False


@pytest.mark.parametrize("command", ["meta-train", "probe", "sweep", "pbt"])
def test_seed_replaces_the_configs_seed_after_the_users_own_set(command):
    from metadisco.cli.common import seed_override

    args = build_parser().parse_args([command, "c.yaml", "--set", "seed=3", "--seed", "7",
                                      *(["--out", "o"] if command != "probe" else [])])
    assert seed_override(args) == ["seed=3", "seed=7"]


def test_distil_seed_is_gplearns_random_state():
    args = build_parser().parse_args(["distil", "ppo", "--method", "symbolic", "--seed", "5", "--out", "o"])
    assert args.seed == 5
    with pytest.raises(SystemExit):  # 0.1.0's name, refused in one line naming --seed
        build_parser().parse_args(["distil", "ppo", "--random-state", "6", "--out", "o"])


def test_meta_train_gain_is_a_percentage_only_of_a_start_above_zero():
    from metadisco.cli.meta_train_cmd import gain

    assert gain(116.0, 129.46) == "+13.46 (+11.6%)"
    assert gain(1.0, 1.412) == "+0.412 (+41.2%)"
    # An update rule's return can start below zero: 0.78 above -0.16 is not "+488%".
    assert gain(-0.16, 0.62) == "+0.78"
    assert gain(0.0, 0.5) == "+0.5"
    assert gain(2.0, 1.0) == "-1 (-50.0%)"
