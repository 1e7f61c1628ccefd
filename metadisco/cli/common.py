"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from metadisco.errors import UserError


def positive_int(name: str):
    def parse(text: str) -> int:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer, got {text!r}") from None
        if not value.is_integer() or value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer, got {text!r}")
        return int(value)

    return parse


def add_set_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting (repeatable), e.g. --set lr=1e-3")


def output_dir(path: str) -> Path:
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {path!r} is a file; give a directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


def say(message: str) -> None:
    """Progress for people, on stderr so stdout stays parseable."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
