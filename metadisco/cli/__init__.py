"""The `metadisco` command. Each subcommand lives in its own module with `add_parser(subparsers)` and
`run(args)`; add a module to `COMMANDS` to add a command.

User mistakes raise `UserError`: one line on stderr, exit status 2, no traceback. So do `OSError`s that
reach here (a disk that fills, a file that vanishes): they are the machine's answer, not a bug, and name the
path. Every message is folded onto one line and capped in length, whatever text it quotes.
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


MAX_MESSAGE = 1000  # characters of an error line


def one_line(message: str) -> str:
    """`message` on one line (newlines folded), at most `MAX_MESSAGE` characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= MAX_MESSAGE else f"{text[:MAX_MESSAGE - 20]}... ({len(text):,} characters)"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: one line, status 2
        sys.stderr.write(f"metadisco: error: {one_line(message)}\n")
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
        sys.stderr.write(f"metadisco {args.command}: error: {one_line(e)}\n")
        return 2
    except OSError as e:
        where = f" {e.filename!r}" if e.filename else ""
        sys.stderr.write(f"metadisco {args.command}: error: {one_line(f'{e.strerror or e}{where}')}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("metadisco: interrupted\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
