"""One meaning per option name (issue 46): every command's parser is walked, and

1. no command option writes to a global option's destination (`distil --progress` once shared `args.progress`
   with the global `--no-progress`, so `--no-progress` distilled at progress 0 without a word);
2. an option string means the same in every command that takes it: the same argparse action kind, value type,
   number of values and destination (bench's `--seeds 1,16` was a list where every other `--seeds N` is a count);
3. end to end, `distil --no-progress` distils the same as without it.

Old names are refused in one line naming the new name (`common.RenamedOption`).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import jax.numpy as jnp
import pytest

from metadisco.cli import add_global_options, build_parser, main
from metadisco.cli.common import RenamedOption
from metadisco.objectives import DRIFTS, Objective, save_objective


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def global_options(top: bool) -> dict[str, str]:
    """option string -> destination of the global options as the top parser (`top`) or each command declares
    them (with -h / --help, which every parser has)."""
    parser = argparse.ArgumentParser()
    add_global_options(parser, top=top)
    return {option: action.dest for action in parser._actions for option in action.option_strings}


def argparse_kind(action: argparse.Action) -> str:
    """The argparse action class an option behaves as (an old spelling stores as `_StoreAction` does)."""
    return next(cls.__name__ for cls in type(action).__mro__ if cls.__module__ == "argparse")


def meaning(action: argparse.Action) -> tuple:
    """What an option is, beyond its help text: action kind, value type, number of values, destination and the
    constant it stores. Types compare by qualified name: `positive_int("--seeds")` and `positive_int("--seeds",
    hi)` are one type, `positive_int` and a plain string are not."""
    kind = None if action.type is None else f"{action.type.__module__}.{action.type.__qualname__}"
    return argparse_kind(action), kind, action.nargs, action.dest, action.const


def test_no_command_option_writes_to_a_global_options_destination():
    globals_ = global_options(top=True) | global_options(top=False)
    global_dests = set(globals_.values())
    clashes = [(command, action.option_strings, action.dest)
               for command, parser in command_parsers().items() for action in parser._actions
               if action.option_strings and not set(action.option_strings) <= set(globals_)
               and action.dest in global_dests]
    assert clashes == []


def test_every_command_declares_the_global_options_as_they_are_declared_for_commands():
    expected = global_options(top=False)
    for command, parser in command_parsers().items():
        declared = {option: action.dest for action in parser._actions for option in action.option_strings
                    if option in expected}
        assert declared == expected, command


def test_each_option_name_has_one_meaning_across_commands():
    meanings = defaultdict(lambda: defaultdict(list))  # option -> meaning -> commands
    for command, parser in command_parsers().items():
        for action in parser._actions:
            if isinstance(action, RenamedOption):
                continue  # a refusal: it stores nothing
            for option in action.option_strings:
                meanings[option][meaning(action)].append(command)
    assert {option: dict(by) for option, by in meanings.items() if len(by) > 1} == {}
    # the walk saw the options this is about, in several commands each
    assert len(meanings["--seeds"][next(iter(meanings["--seeds"]))]) >= 3
    assert len(meanings["--seed"][next(iter(meanings["--seed"]))]) >= 7


def test_an_option_that_stores_one_meaning_has_one_name_per_destination_in_a_command():
    """Two different option names writing to one destination in one command are a clash."""
    for command, parser in command_parsers().items():
        by_dest = defaultdict(list)
        for action in parser._actions:
            if action.option_strings and action.dest != argparse.SUPPRESS:
                by_dest[action.dest].append(action)
        for dest, actions in by_dest.items():
            assert len(actions) == 1, (command, dest, [a.option_strings for a in actions])


@pytest.mark.parametrize(("old", "new"), [("--progress", "--at-progress"), ("--random-state", "--seed")])
def test_distils_old_names_are_refused_naming_the_new(capsys, old, new):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["distil", "ppo", old, "0.25", "--out", "o"])
    assert stop.value.code == 2 and f"is now {new}" in capsys.readouterr().err


def test_bench_seeds_is_refused_naming_seed_counts(capsys):
    for argv in (["bench", "--seeds", "1,16", "--out", "b.json"], ["bench", "--out", "b.json", "--seeds"]):
        with pytest.raises(SystemExit) as stop:
            build_parser().parse_args(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--seeds is now --seed-counts" in err
    assert build_parser().parse_args(["bench", "--seed-counts", "1,4", "--out", "b.json"]).seed_counts == "1,4"


def test_no_progress_does_not_change_a_distillation(tmp_path):
    """A TA-LPO-style drift whose scales move with training progress, distilled at progress 0.75 with and
    without `--no-progress` (before and after the command name): the same fit. At progress 0 it differs, so
    a `--no-progress` that reset the progress would show."""
    objective = Objective(drift=DRIFTS.make("learned_dpo"))
    meta = objective.zero_meta()
    meta["drift"] = {"log_alpha": jnp.array([0.0, 2.0]), "log_beta": jnp.array([0.0, -2.0])}
    source = save_objective(tmp_path / "annealed.msgpack", objective, meta)

    def distilled(name: str, before: list[str], after: list[str]) -> dict:
        out = tmp_path / name
        assert main([*before, "distil", str(source), "--points", "21", "--out", str(out), *after]) == 0
        result = json.loads((out / "distilled.json").read_text())
        return {key: result[key] for key in ("family", "params", "r2", "readable")}

    plain = distilled("plain", [], ["--at-progress", "0.75"])
    assert distilled("after", [], ["--at-progress", "0.75", "--no-progress"]) == plain
    assert distilled("before", ["--no-progress"], ["--at-progress", "0.75"]) == plain
    assert distilled("at_zero", [], ["--at-progress", "0"]) != plain
