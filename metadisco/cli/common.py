"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from metadisco.core.coerce import INT32_MAX, check_seed
from metadisco.core.errors import UserError, shorten
from metadisco.core.io import check_output_dir

# Timesteps may exceed int32 (they are not a size; the update count, checked in TrainConfig.validate, is);
# 2**53 is where a float stops holding every integer.
MAX_TIMESTEPS = 2**53


# The flag of each setting that library errors name (`metadisco.core.errors.SettingError`): a Python caller
# passed `num_seeds`, a shell user typed `--seeds`, and each reads the name they used. One meaning per flag across
# commands (tests/cli/test_option_names.py) is what lets one table serve every command.
SETTING_FLAGS = {"num_seeds": "--seeds", "seed": "--seed", "envs": "--envs", "baselines": "--baselines",
                 "tune": "--tune", "devices": "--devices", "generations": "--generations",
                 "population": "--population", "out": "--out", "resume": "--resume", "override": "--set"}


def positive_int(name: str, hi: int = INT32_MAX):
    """An argparse type: a positive integer up to `hi` (1e3 is accepted; NaN, inf and fractions are not)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{name} must be a positive integer, got {shorten(text)}") from None
        if isinstance(value, float) and not value.is_integer() or value <= 0:  # NaN is not an integer
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer, got {shorten(text)}")
        if value > hi:
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer up to {hi:,}, got {shorten(text)}")
        return int(value)

    return parse


def seed_int(name: str):
    """An argparse type: a seed, 0 <= seed < 2**32 (see `metadisco.core.coerce.check_seed`)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {shorten(text)}") from None
        try:
            return check_seed(name, value)
        except UserError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return parse


def comma_separated(text: str) -> list[str]:
    """An argparse type: a comma-separated list (`--envs a,b`), blanks dropped; `,` gives []."""
    return [part.strip() for part in text.split(",") if part.strip()]


# ---------------------------------------------------------------------------------------------------------
# renamed options: one meaning per option name across commands (`tests/cli/test_option_names.py`)


class RenamedOption(argparse.Action):
    """An old option name that would now mean something else (elsewhere it is another option): refused in one
    line naming the new one, never silently read as that other option."""

    def __init__(self, option_strings, dest, new: str, why: str, **kwargs):
        super().__init__(option_strings, argparse.SUPPRESS, nargs="?", default=argparse.SUPPRESS, **kwargs)
        self.new, self.why = new, why

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{parser.prog} {option_string} is now {self.new} ({self.why})")


def add_renamed_option(parser: argparse.ArgumentParser, old: str, new: str, why: str) -> None:
    """Refuse `old`, renamed to `new`, in one line that says `why` (hidden from --help)."""
    parser.add_argument(old, action=RenamedOption, new=new, why=why, help=argparse.SUPPRESS)


def add_set_option(parser: argparse.ArgumentParser,
                   help: str = "override a setting (repeatable), e.g. --set lr=1e-3") -> None:
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=help)


def add_baseline_cache_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-baseline-cache", dest="baseline_cache", action="store_false",
                        help="measure PPO's reference scores and the random policy's returns again instead of "
                             "reading them from the baseline cache ($XDG_CACHE_HOME/metadisco/baselines)")


def use_baseline_cache(args) -> None:
    """Turn the baseline cache on or off as the command line says (`metadisco.runs.baseline_cache`)."""
    from metadisco.runs import baseline_cache

    baseline_cache.configure(args.baseline_cache)


def add_dry_run_options(parser: argparse.ArgumentParser) -> None:
    """--dry-run and the accelerator its estimate is for (`metadisco.parallel.cost`)."""
    from metadisco.parallel.cost import ACCELERATORS

    parser.add_argument("--dry-run", action="store_true",
                        help="plan without running: compile the programs and print env steps, FLOPs and memory "
                             "per call (meta-train: and the time of one generation, measured) and in total, and an "
                             "estimate on --accelerator; nothing is trained or written")
    parser.add_argument("--accelerator", default="A100-40GB", metavar="NAME",
                        help=f"the accelerator of the dry run's estimate: {', '.join(ACCELERATORS)} "
                             "(default A100-40GB)")
    for name, what in (("flops", "peak float32 FLOP/s"), ("bandwidth", "memory bandwidth in bytes/s"),
                       ("memory", "memory in bytes")):
        parser.add_argument(f"--accelerator-{name}", type=positive_float(f"--accelerator-{name}"), default=None,
                            metavar="X", help=f"the accelerator's {what} (overrides --accelerator's)")


def dry_run_accelerator(args):
    """The `metadisco.parallel.cost.Accelerator` that `add_dry_run_options`' flags name."""
    from metadisco.parallel import cost

    return cost.accelerator(args.accelerator, args.accelerator_flops, args.accelerator_bandwidth,
                            args.accelerator_memory)


def positive_float(name: str):
    """An argparse type: a finite number > 0 (1e12 is fine)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (0 < value < float("inf")):
            raise argparse.ArgumentTypeError(f"{name} must be a positive number, got {shorten(text)}")
        return value

    return parse


def output_dir(path: str, lock: bool = True) -> Path:
    """--out as a directory that exists and can be written in, checked before any work (see `metadisco.core.io`),
    and, with `lock`, this process's alone to write until the command ends (`metadisco.core.lock`); in a
    multi-process run only the writer (process 0) locks it, and only it writes."""
    from metadisco.core import lock as rundir_lock

    out = check_output_dir(path, "--out")
    if lock and is_writer():
        rundir_lock.hold(out, say)
    return out


def show_progress(args) -> bool:
    """Progress bars and per-round lines: unless --no-progress, and only when stderr is a terminal (a log file
    or a pipe gets no bar redraws); in a multi-process run only on process 0."""
    return getattr(args, "progress", True) and sys.stderr.isatty() and is_writer()


def progress_lines(args) -> bool:
    """What a long command shows instead of a bar when stderr is a file or a pipe: plain lines, one per unit of
    work that took real time (evaluate's trained calls), unless --no-progress; process 0's alone."""
    return getattr(args, "progress", True) and not sys.stderr.isatty() and is_writer()


def add_track_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--track", action="append", default=[], metavar="wandb|tensorboard",
                        help="also log the metrics to Weights & Biases (offline unless WANDB_MODE=online) or to "
                             "TensorBoard event files in the output directory (repeatable or comma-separated; "
                             "pip install 'metadisco[track]'); metrics.jsonl stays the record")


def open_tracking(args, directory, config: dict | None = None):
    """The run's `metadisco.runs.tracking.Tracking` for --track (None without it, or on a process that does
    not write)."""
    from metadisco.runs.tracking import check_trackers
    from metadisco.runs.tracking import open_tracking as open_

    kinds = check_trackers(getattr(args, "track", []))
    if not kinds or not is_writer():
        return None
    return open_(kinds, directory, Path(directory).name, config)


# ---------------------------------------------------------------------------------------------------------
# several processes: every command whose work is sharded over the one mesh (meta-train, probe, evaluate,
# sweep, pbt) can run across hosts through JAX's multi-controller runtime


_WRITER = [True]  # this process prints progress and writes files: False on processes other than 0


def add_distributed_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--distributed", action="store_true",
                        help="run as one process of several (jax.distributed.initialize(); also implied by "
                             "JAX_COORDINATOR_ADDRESS and JAX_NUM_PROCESSES): the work is sharded over every "
                             "device of every process, and only process 0 prints and writes")


def start_processes(args) -> None:
    """Join the multi-process run when the command was asked to (--distributed, or the usual environment
    variables), before anything touches a device. Commands without the option are never distributed."""
    from metadisco.parallel import hosts

    if not hasattr(args, "distributed") or not (args.distributed or hosts.wants_distributed()):
        return
    if args.devices is not None:
        from metadisco.parallel.devices import ONE_PROCESS_DEVICES

        raise UserError(ONE_PROCESS_DEVICES)
    _native_stdout_to_stderr()
    hosts.initialize()
    _WRITER[0] = hosts.is_writer()


def _native_stdout_to_stderr() -> None:
    """Point file descriptor 1 at standard error and keep Python's `sys.stdout` on the real standard output.
    Code below Python writes to descriptor 1 directly: gloo, JAX's CPU collectives, prints "[Gloo] Rank 0 is
    connected to 1 peer ranks ..." with std::cout when a collective first runs, which would break a script
    that parses the command's output."""
    sys.stdout.flush()
    real = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = open(real, "w", buffering=1, encoding=sys.stdout.encoding, errors=sys.stdout.errors)  # noqa: SIM115


def is_writer() -> bool:
    """This process prints and writes: always, but for processes other than 0 of a multi-process run."""
    return _WRITER[0]


def add_config_options(parser: argparse.ArgumentParser, config_help: str, seed_help: str) -> None:
    """The first options of every command a YAML config drives (meta-train, probe, pbt, sweep): the config file,
    --set overrides of it and --seed (`seed_help` says what it seeds)."""
    parser.add_argument("config", metavar="CONFIG.yaml", help=config_help)
    add_set_option(parser)
    add_seed_option(parser, seed_help)


def add_seed_option(parser: argparse.ArgumentParser, what: str) -> None:
    """--seed, the one name for the seed a command draws from (`what` says what it seeds); default None: the
    config's own seed, or 0."""
    parser.add_argument("--seed", type=seed_int("--seed"), default=None,
                        help=f"base seed, 0 <= seed < 2**32: {what}")


def seed_override(args) -> list[str]:
    """--set overrides with the config's `seed` replaced by --seed, if given (after the user's own --set)."""
    return [*args.overrides, *([f"seed={args.seed}"] if args.seed is not None else [])]


def say(message: str) -> None:
    """Progress for people, on stderr so stdout stays parseable (process 0's alone in a multi-process run)."""
    if not is_writer():
        return
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
