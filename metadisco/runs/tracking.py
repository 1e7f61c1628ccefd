"""Experiment tracking: the numbers a run writes to metrics.jsonl, also sent to Weights & Biases or TensorBoard.

    tracking = open_tracking(["wandb", "tensorboard"], "runs/my_run", name="my_run", config=config_dict)
    tracking.log(step, {"fitness_mean": 1.2, "returns": {"CartPole-v1": 151.0}})   # "returns/CartPole-v1"
    tracking.close()

metrics.jsonl stays the source of truth: a tracker gets a copy of each line, flattened to numbers (nested
mappings joined with "/", lists and text left out). Tracking never blocks or fails a run: a tracker that cannot
start (its package missing, a service unreachable) or fails later becomes one warning, and the run goes on
without it.

- `wandb` (`pip install 'metadisco[track]'`): offline unless the user configures otherwise (`WANDB_MODE=online`
  and a `wandb login`; `WANDB_PROJECT`, default "metadisco"), files under RUN_DIR/wandb/ (`wandb sync` uploads an
  offline run later).
- `tensorboard` (tensorboardX's event-file writer, no TensorFlow): RUN_DIR/tensorboard/, read with
  `tensorboard --logdir RUN_DIR/tensorboard`.

A `Tracking` is also a meta-training callback (`metadisco.meta.callbacks`): `on_generation` logs the
generation's metrics line at step = generation, `on_end` closes it.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path

from metadisco.core.errors import MetadiscoWarning, shorten

TRACKERS = ("wandb", "tensorboard")
TENSORBOARD_DIR = "tensorboard"


def flatten(line: Mapping | list | tuple, prefix: str = "") -> dict[str, float]:
    """The numbers of a metrics line as {"a/b": float}: nested mappings and lists joined with "/" (a list's
    entries by index: PBT's per-agent scores are "scores/0", "scores/1", ...), booleans, text and None left out,
    non-finite numbers kept (a diverged member's NaN is a number to chart)."""
    out = {}
    items = line.items() if isinstance(line, Mapping) else enumerate(line)
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, (Mapping, list, tuple)):
            out.update(flatten(value, f"{name}/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
    return out


class _Wandb:
    def __init__(self, directory: Path, name: str | None, config: dict | None):
        import wandb

        directory.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(mode=os.environ.get("WANDB_MODE", "offline"), dir=str(directory),
                              project=os.environ.get("WANDB_PROJECT", "metadisco"), name=name, config=config or {},
                              reinit="create_new", settings=wandb.Settings(silent=True, console="off"))

    def log(self, step: int, numbers: dict[str, float]) -> None:
        self.run.log(numbers, step=step)

    def close(self) -> None:
        self.run.finish()


class _TensorBoard:
    def __init__(self, directory: Path, name: str | None, config: dict | None):
        from tensorboardX import SummaryWriter

        self.writer = SummaryWriter(logdir=str(directory / TENSORBOARD_DIR))

    def log(self, step: int, numbers: dict[str, float]) -> None:
        for key, value in numbers.items():
            self.writer.add_scalar(key, value if math.isfinite(value) else float("nan"), step)
        self.writer.flush()  # a reader (or a crash) sees every generation logged so far

    def close(self) -> None:
        self.writer.close()


_MAKERS = {"wandb": _Wandb, "tensorboard": _TensorBoard}


def check_trackers(kinds) -> list[str]:
    """The tracker names of `--track` (a list, or comma-separated text), each checked; a UserError names the
    choices."""
    from metadisco.core.errors import unknown_name_error

    names = [k.strip() for part in ([kinds] if isinstance(kinds, str) else list(kinds or ()))
             for k in part.split(",") if k.strip()]
    for name in names:
        if name not in TRACKERS:
            raise unknown_name_error("--track", name, TRACKERS)
    return list(dict.fromkeys(names))


class Tracking:
    """The trackers of one run, started on the first line logged (so a tracker's files never make a new run
    directory look used before the run has checked it); each error turns its tracker off with one warning
    (`MetadiscoWarning`)."""

    def __init__(self, kinds=(), directory: str | Path = ".", name: str | None = None, config: dict | None = None):
        self.pending = check_trackers(kinds)
        self.directory, self.name, self.config = Path(directory), name, config
        self.trackers: dict = {}

    def start(self) -> None:
        """Start each pending tracker; one that cannot start is a warning, not an error (its package missing:
        `pip install 'metadisco[track]'`)."""
        for kind in self.pending:
            try:
                self.trackers[kind] = _MAKERS[kind](self.directory, self.name, self.config)
            except ImportError:
                warnings.warn(f"--track {kind}: its package is not installed (pip install 'metadisco[track]'); "
                              "the run goes on without it", MetadiscoWarning, stacklevel=2)
            except Exception as e:  # noqa: BLE001  (a tracker that cannot start never stops the run)
                warnings.warn(f"--track {kind} could not start ({shorten(str(e) or type(e).__name__, 200)}); the "
                              "run goes on without it", MetadiscoWarning, stacklevel=2)
        self.pending = []

    def _guarded(self, name: str, action: str, call) -> None:
        try:
            call()
        except Exception as e:  # noqa: BLE001  (any failure of a tracker: the run goes on without it)
            self.trackers.pop(name, None)
            warnings.warn(f"tracking with {name} stopped ({action}: {shorten(str(e) or type(e).__name__, 200)}); "
                          "metrics.jsonl has every number", MetadiscoWarning, stacklevel=2)

    def log(self, step: int, line: Mapping) -> None:
        if self.pending:
            self.start()
        numbers = flatten(line)
        for name, tracker in list(self.trackers.items()):
            self._guarded(name, "log", lambda t=tracker: t.log(step, numbers))

    def close(self) -> None:
        for name, tracker in list(self.trackers.items()):
            self._guarded(name, "close", tracker.close)
        self.trackers, self.pending = {}, []

    # -- as a meta-training callback ------------------------------------------------------------------

    def on_generation(self, line: dict, seconds) -> None:
        self.log(int(line["generation"]), line)

    def on_end(self, result, run_dir) -> None:
        self.close()


def open_tracking(kinds, directory: str | Path, name: str | None = None, config: dict | None = None) -> Tracking:
    """The `Tracking` of `kinds` for the run in `directory` (checked now: an unknown name is a UserError before
    any work; started on the first line logged)."""
    return Tracking(kinds, directory, name, config)
