"""The `metadisco` command. Each subcommand lives in its own module with `add_parser(subparsers)` and
`run(args)`; add a module to `COMMANDS` to add a command.

User mistakes raise `UserError`: one line on stderr, exit status 2, no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from metadisco.errors import UserError

# name -> module under metadisco.cli, in the order `metadisco --help` lists them.
COMMANDS = {
    "envs": "envs_cmd",
    "train": "train_cmd",
    "meta-train": "meta_train_cmd",
    "probe": "probe_cmd",
    "bench": "bench_cmd",
    "evaluate": "evaluate_cmd",
    "plot": "plot_cmd",
    "distil": "distil_cmd",
    "report": "report_cmd",
    "inspect": "inspect_cmd",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: one line, status 2
        sys.stderr.write(f"metadisco: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="metadisco", description="Discover RL objectives by evolution.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(f"metadisco.cli.{module_name}")
        module.add_parser(sub, name)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args) or 0
    except UserError as e:
        sys.stderr.write(f"metadisco {args.command}: error: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("metadisco: interrupted\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
