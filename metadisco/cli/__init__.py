"""The `metadisco` command. Each subcommand lives in its own module with `add_parser(subparsers)` and
`run(args)`; add a module to `COMMANDS` to add a command.

User mistakes raise `UserError`: one line on stderr, exit status 2, no traceback. So do `OSError`s that
reach here (a disk that fills, a file that vanishes): they are the machine's answer, not a bug, and name the
path. Every message is folded onto one line and capped in length, whatever text it quotes.

Before a command imports JAX, `main` sets up the process: one XLA host device per core (unless XLA_FLAGS
already sets a count; `--devices N` chooses N) and JAX's persistent compilation cache (`--no-compile-cache`
to skip). Third-party import noise never reaches stdout (brax's mujoco prints "Failed to import warp" there;
see `metadisco.envs.brax_adapter.brax_envs`), so stdout carries only the command's own output, and a reader that
closes the pipe early (`| head`) ends the command quietly. `--no-progress` turns progress bars off; they are
off anyway when stderr is not a terminal (`metadisco.cli.common.show_progress`), where evaluate writes one line per
trained call instead (`progress_lines`). Then it loads plugins: each
`--plugin MODULE` (repeatable; a module name or a .py file) and every installed package's `metadisco.core.plugins`
entry point (group `metadisco.plugins`). All are global options, accepted before or after the command name.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from metadisco.cli import supervise
from metadisco.cli.common import SETTING_FLAGS, positive_int, start_processes
from metadisco.core.errors import MetadiscoWarning, SettingError, UserError

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
    "sweep": "sweep_cmd",
    "pbt": "pbt_cmd",
    "export": "export_cmd",
    "import": "import_cmd",
    "catalogue": "catalogue_cmd",
    "leaderboard": "leaderboard_cmd",
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


def add_global_options(parser: argparse.ArgumentParser, top: bool) -> None:
    """--devices, --no-compile-cache, --plugin and --no-progress, on the top parser and on every command (where
    they default to SUPPRESS, so a command's parser never overwrites what was given before the command name):
    every command that does long work takes the same ones (`tests/cli/test_common_options.py`)."""
    default = {} if top else {"default": argparse.SUPPRESS}
    parser.add_argument("--devices", type=positive_int("--devices"), metavar="N", **({"default": None} | default),
                        help="devices to shard work over (default: every device; on CPU one per core, unless "
                             "XLA_FLAGS sets --xla_force_host_platform_device_count)")
    parser.add_argument("--no-compile-cache", dest="compile_cache", action="store_false",
                        **({"default": True} | default),
                        help="do not use JAX's persistent compilation cache (default: on, in "
                             "$XDG_CACHE_HOME/metadisco/jax or ~/.cache/metadisco/jax)")
    parser.add_argument("--plugin", dest="plugins" if top else "command_plugins", action="append", metavar="MODULE",
                        **({"default": []} if top else {"default": argparse.SUPPRESS}),
                        help="load a module that registers its own drifts, value losses, optimisers or envs "
                             "(repeatable; a module name, found on the Python path or in the working directory, or a "
                             ".py file)")
    parser.add_argument("--no-progress", dest="progress", action="store_false", **({"default": True} | default),
                        help="no progress bars or per-round progress lines (default: bars when stderr is a "
                             "terminal; when it is a file or a pipe, no bars, and evaluate writes a line per "
                             "trained call)")


def build_parser() -> argparse.ArgumentParser:
    from metadisco import __version__

    parser = _Parser(prog="metadisco", description="Discover RL objectives by evolution.")
    parser.add_argument("--version", action="version", version=f"metadisco {__version__}")
    add_global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(f"metadisco.cli.{module_name}")
        module.add_parser(sub, name)
        add_global_options(sub.choices[name], top=False)
    return parser


def set_up_runtime(args) -> None:
    """Devices, deterministic GPU kernels and the compilation cache, before the command imports JAX (a program that
    imported JAX first has chosen its devices and flags already; then `--devices N` selects N of them)."""
    from metadisco.parallel import compile_cache, devices

    if "jax" not in sys.modules:
        devices.use_all_cores(args.devices, override=args.devices is not None)
        devices.use_deterministic_gpu()
    compile_cache.configure(args.compile_cache)


def load_plugins(args) -> None:
    """--plugin modules (before and after the command name), then installed packages' entry points."""
    from metadisco.core.plugins import load_entry_points
    from metadisco.core.plugins import load_plugins as load

    load([*args.plugins, *getattr(args, "command_plugins", [])])
    load_entry_points()


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """metadisco's own warnings as one line, like its errors; other libraries' as Python prints them."""
    if issubclass(category, MetadiscoWarning):
        sys.stderr.write(f"metadisco: warning: {message}\n")
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


def _is_distributed(args) -> bool:
    """Whether this command joins a multi-process run (`--distributed`, or the usual environment variables)."""
    from metadisco.parallel.devices import wants_distributed  # JAX is not imported yet: devices come first

    return hasattr(args, "distributed") and bool(args.distributed or wants_distributed())


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning  # a warning while parsing: one line
        args = parser.parse_args(argv)
    if _is_distributed(args) and not supervise.is_child():  # a lost peer is said in one line (cli.supervise)
        return supervise.run_supervised(list(sys.argv[1:] if argv is None else argv))
    set_up_runtime(args)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            start_processes(args)  # --distributed: before anything touches a device
            load_plugins(args)
            status = args.run(args) or 0
            sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, not at interpreter exit
            return status
    except UserError as e:
        text = e.for_flags(SETTING_FLAGS) if isinstance(e, SettingError) else e  # the flags the user typed
        sys.stderr.write(f"metadisco {args.command}: error: {one_line(text)}\n")
        return 2
    except BrokenPipeError:  # stdout's reader left (`metadisco envs | head`): stop quietly, as `cat` would
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 141  # 128 + SIGPIPE, what a shell reports for a command the closed pipe stopped
    except OSError as e:
        where = f" {e.filename!r}" if e.filename else ""
        sys.stderr.write(f"metadisco {args.command}: error: {one_line(f'{e.strerror or e}{where}')}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("metadisco: interrupted\n")
        return 130
    except Exception as e:
        if supervise.is_child() and supervise.peer_lost_in(e):
            # A collective lost its peer: the supervisor says so. Leave at once: JAX's exit handler would wait on
            # the dead peer at the shutdown barrier and then abort with a C++ stack trace.
            sys.stderr.flush()
            os._exit(supervise.PEER_LOST)
        raise
    finally:
        from metadisco.core import lock as rundir_lock

        rundir_lock.release_all()  # the output directories this command wrote into


if __name__ == "__main__":
    raise SystemExit(main())
