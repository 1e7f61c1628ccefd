"""A meta-training run directory: its layout, the checks before a run or a resume, and every file in it.

    config.yaml              the resolved config (a resume must match it, up to `generations`)
    devices.json             the device count the run is bit-identical for
    baselines.json           the baselines fitness is scored against (when there are any)
    metrics.jsonl            one JSON object per generation, appended and fsync'd, each with its schema version
    objective.msgpack        the ES mean, rewritten every generation
    objective_best.msgpack   with validation: the ES mean that scored best on the validation tasks
    hyper.json               with a `hyper:` section: the evolved settings (units and each task's values) of
                             the ES mean and of the kept objective; the objective files hold no settings
    checkpoints/             gen_NNNNNN.msgpack (`metadisco.core.checkpoint`)
    summary.json             written at the end of a run
    meta_curve.png           the population's fitness and the ES mean's per generation (a callback draws it)

Every file is written atomically (a temporary name, then a rename) except metrics.jsonl, which is appended
line by line; a checkpoint records how many of its lines it accounts for, and a resume truncates it to that.
Only the writer process (process 0 of a multi-host run) writes, and holds the directory's lock
(`metadisco.core.lock`: `.lock`, one writer per directory) while it does; every process reads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from metadisco.core import checkpoint as ckpt_lib
from metadisco.core import lock as rundir_lock
from metadisco.core.errors import SettingError, UserError
from metadisco.core.io import atomic_write_text, os_error, read_text, read_yaml, to_jsonable
from metadisco.runs.migrate import METRICS_SCHEMA, upgrade_metrics_line

CONFIG = "config.yaml"
BASELINES = "baselines.json"
METRICS = "metrics.jsonl"
OBJECTIVE = "objective.msgpack"
BEST_OBJECTIVE = "objective_best.msgpack"
HYPER = "hyper.json"
CHECKPOINTS = "checkpoints"
SUMMARY = "summary.json"
META_CURVE = "meta_curve.png"


def _stderr(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


class RunDir:
    """The run directory at `path`; `writer`: this process writes its files (process 0)."""

    def __init__(self, path: str | Path, writer: bool = True, say=_stderr):
        self.path = Path(path)
        self.writer = writer
        self.say = say

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    # -- checks ---------------------------------------------------------------------------------------

    def check_before_run(self, resume: bool) -> None:
        """Everything about the directory that can be refused before a run is built (and before its first line
        of progress): a non-empty directory without `resume`, an unwritable one, and with `resume` a damaged or
        unreadable checkpoint, config.yaml or metrics.jsonl. `resume_point` checks the same again as it starts."""
        from metadisco.core.io import check_output_dir

        if self.writer:  # a run never ends by failing to write; and one writer at a time (before "not empty")
            check_output_dir(self.path)
            rundir_lock.hold(self.path, self.say)
        self._refuse_non_empty(resume)
        if resume:
            ckpt_lib.latest(self / CHECKPOINTS)
            if (self / CONFIG).exists():
                read_yaml(self / CONFIG)
            if self.writer and (self / METRICS).exists():
                read_text(self / METRICS, "metrics file")

    def _refuse_non_empty(self, resume: bool) -> None:
        if not resume and self.writer and self.path.is_dir() and any(not rundir_lock.is_lock_file(p)
                                                                     for p in self.path.iterdir()):
            raise SettingError(f"{str(self.path)!r} is not empty; pass resume to continue the run there, "
                               "or choose a new out", ("resume", "out"))

    def resume_point(self, resume: bool, config_yaml: str, config_dict: dict, mesh=None, upgrade=None
                     ) -> ckpt_lib.Checkpoint | None:
        """Check the directory for a run of the config `config_yaml` (resolved YAML; `config_dict` its dict);
        return the checkpoint to resume from, if any. `upgrade`: a stored config.yaml's data (any version) -> as
        `config_dict` is written, so that a run made by an older version resumes; without it the stored file is
        compared as it is."""
        from metadisco.parallel import hosts

        if self.path.exists() and not self.path.is_dir():
            raise SettingError(f"out {str(self.path)!r} is a file; give a directory", ("out",))
        if not resume:
            self._refuse_non_empty(resume)
            return None
        digest = ckpt_lib.config_digest(config_yaml)
        ckpt = ckpt_lib.latest(self / CHECKPOINTS)
        saved = self / CONFIG
        if ckpt is None:  # killed before the first checkpoint: start again, if it is the same run
            if saved.is_file() and ckpt_lib.config_digest(saved.read_text()) != digest \
                    and self._stored_config(upgrade) != config_dict:
                raise UserError(f"the config differs from the one of the run in {self.path}")
            self.say(f"no checkpoint in {self / CHECKPOINTS} yet: starting from generation 0")
            return None
        if ckpt.config_sha256 != digest:
            # The one change a resume allows: more (or fewer) generations.
            old = self._stored_config(upgrade)
            if old is None or {**old, "generations": None} != {**config_dict, "generations": None}:
                raise UserError(f"the config differs from the one of the run in {self.path}; resume with the same "
                                "config (only generations may change)")
        if mesh is not None:
            hosts.warn_if_other_devices(self.path, mesh)
        return ckpt

    def _stored_config(self, upgrade) -> dict | None:
        """config.yaml's data as `upgrade` writes it now (None without the file, or where it no longer reads)."""
        saved = self / CONFIG
        if not saved.is_file():
            return None
        old = read_yaml(saved)
        if upgrade is None:
            return old
        try:
            return upgrade(old)
        except UserError as e:
            self.say(f"{saved} does not read as a config of this version ({e})")
            return None

    def disk_full_advice(self) -> str:
        """What to do after a full disk stopped the run: the checkpoint a resume starts from, and --resume."""
        found = ckpt_lib.list_checkpoints(self / CHECKPOINTS)
        kept = f"its last checkpoint {found[-1]} is intact" if found else "it had no checkpoint yet"
        return f"the run stopped; {kept}: free space, then continue with --resume"

    def writing(self):
        """A context holding the directory's writer lock (`metadisco.core.lock`) on the writer process; on
        the others, or for a path that is a file (refused by `resume_point`), nothing."""
        import contextlib

        if not self.writer or (self.path.exists() and not self.path.is_dir()):
            return contextlib.nullcontext()
        return rundir_lock.writing(self.path, self.say)

    def start_fresh(self) -> None:
        """Make the directory for a run from generation 0 (a resume that found no checkpoint starts afresh)."""
        if not self.writer:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        (self / CHECKPOINTS).mkdir(exist_ok=True)
        if (self / METRICS).exists():
            self.truncate_metrics(0)

    # -- metrics.jsonl --------------------------------------------------------------------------------

    def append_metrics(self, line: dict) -> None:
        """One line of metrics.jsonl: `line` under the current schema (`metadisco.runs.migrate.METRICS_SCHEMA`)."""
        if not self.writer:
            return
        try:
            with open(self / METRICS, "a") as f:
                f.write(json.dumps(to_jsonable({"schema": METRICS_SCHEMA, **line})) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:  # a line cut off here is dropped, and said, on --resume (`truncate_metrics`)
            raise os_error(e, "append to", self / METRICS) from None

    def truncate_metrics(self, lines: int) -> None:
        """Keep the first `lines` lines (those the checkpoint accounts for): a resumed run rewrites the rest.

        A line without its newline was cut off mid-write (a torn file): it is dropped and said, never kept
        for the next record to be appended onto. If the torn line was one the checkpoint counts, its record
        is lost; a placeholder with null figures and `"lost": true` keeps one line per generation."""
        if not self.writer:
            return
        path = self / METRICS
        text = read_text(path, "metrics file") if path.exists() else ""
        kept = text.splitlines(keepends=True)
        if kept and not kept[-1].endswith("\n"):
            torn = kept.pop()
            lost = len(kept) < lines
            self.say(f"{path}: dropped a partial last line ({len(torn.encode())} bytes, cut off mid-write)"
                     + (f"; the record of generation {len(kept)} is lost, a placeholder stands in" if lost else ""))
            if lost:
                kept.append(json.dumps({"schema": METRICS_SCHEMA, "generation": len(kept), "fitness_mean": None,
                                        "fitness_max": None, "seconds": None, "lost": True}) + "\n")
        kept = kept[:lines]
        if len(kept) < lines:
            raise UserError(f"{path} has {len(kept)} lines but the checkpoint counts {lines}; it was damaged")
        atomic_write_text(path, "".join(kept))

    def has_metrics(self) -> bool:
        return (self / METRICS).is_file()

    def read_metrics(self, lenient: bool = False) -> list[dict]:
        """The generations recorded in metrics.jsonl, one dict each, as this version writes them (older lines
        through `metadisco.runs.migrate.upgrade_metrics_line`; no "schema" key). A damaged line is a `UserError`,
        as is a file with no generation; `lenient` (a figure drawn as a convenience) leaves damaged lines out and
        returns [] for a missing file."""
        path = self / METRICS
        if lenient and not path.is_file():
            return []
        rows = []
        for number, line in enumerate(read_text(path, "metrics file").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(upgrade_metrics_line(json.loads(line), f"line {number} of {path}"))
            except json.JSONDecodeError:
                if lenient:
                    continue
                raise UserError(f"damaged line {number} in {path}") from None
            except UserError:
                if lenient:
                    continue
                raise
        if not rows and not lenient:
            raise UserError(f"{path} has no generations yet")
        return rows

    # -- files ----------------------------------------------------------------------------------------

    def write_config(self, config_yaml: str, mesh) -> None:
        """config.yaml and devices.json."""
        from metadisco.parallel import hosts

        if not self.writer:
            return
        atomic_write_text(self / CONFIG, config_yaml)
        hosts.record_devices(self.path, mesh)

    def write_json(self, name: str, value: Any) -> None:
        if self.writer:
            atomic_write_text(self / name, json.dumps(to_jsonable(value), indent=2) + "\n")

    def write_objective(self, objective, meta, best: bool = False) -> None:
        """objective.msgpack (or objective_best.msgpack) from the host meta-parameters `meta`."""
        from metadisco.objectives.files import save_objective

        if self.writer:
            save_objective(self / (BEST_OBJECTIVE if best else OBJECTIVE), objective, meta)

    def load_best_meta(self):
        """The meta-parameters of objective_best.msgpack."""
        from metadisco.objectives.files import load_objective

        return load_objective(self / BEST_OBJECTIVE)[1]

    def save_checkpoint(self, ckpt: ckpt_lib.Checkpoint) -> None:
        if self.writer:
            ckpt_lib.save(self / CHECKPOINTS, ckpt)
