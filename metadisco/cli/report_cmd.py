"""metadisco report: one markdown page for a meta-training run directory."""

from __future__ import annotations

from metadisco.cli.common import say


def add_parser(sub, name):
    p = sub.add_parser(name, help="write RUN_DIR/report.md: meta-training curve, figures, evaluation, distilled forms")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a meta-training run directory (holds objective.msgpack)")
    p.set_defaults(run=run)


def run(args) -> int:
    from pathlib import Path

    from metadisco.analysis.report import write_report
    from metadisco.core import lock as rundir_lock
    from metadisco.core.errors import UserError
    from metadisco.core.io import check_output_dir

    if not Path(args.run_dir).is_dir():
        raise UserError(f"no run directory {args.run_dir!r}")
    check_output_dir(args.run_dir, "RUN_DIR")  # report.md is written there
    rundir_lock.hold(args.run_dir, say)  # no report from a run still being written, nor two reports at once
    out = write_report(Path(args.run_dir))
    print(out)
    say(f"wrote {out}")
    return 0
