#!/usr/bin/env python3
"""The GPU queue: every pending GPU job of the results, in priority order, one piece of about 9 minutes per device
call. A piece works through the jobs that are not done, resuming each from what earlier pieces returned (their files
committed here), and returns everything it wrote as one tarball.

    python results/gpu_queue/queue.py --dry-run     # here: each job, done or pending, what the next piece runs
    python results/gpu_queue/queue.py --prepare     # here: what a piece carries (wheels, PureJaxRL, Disco103)
    device: python3 results/gpu_queue/queue.py      # carry: .whl, .peers, runs (returns $OUT/gpu_queue.tgz)
    tar xzf FILES_AT/gpu_queue.tgz                  # here, at the repository root; then commit what it unpacked

The lent machine reaches no package registry: `results/bench/gpu/env.sh` installs the carried wheels beside the
image's own jax and puts this checkout on PYTHONPATH. Each job's command stops itself before the piece's time is
spent (`timeout`, SIGTERM: the resumable commands lose at most the cell or generation under way). Stdlib only: it
runs on the machine's Python before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIECE_SECONDS = 540  # a 10-minute device call, with room to start and to copy the tarball back
CARRY = (".whl", ".peers", "runs")


@dataclass(frozen=True)
class Job:
    """One GPU job. `done` and `progress` read the repository's committed files; `outputs` are the paths (relative
    to the root) the piece packs; `command` runs from the root with `$LIMIT` the seconds it may take."""

    name: str
    summary: str
    command: str
    outputs: tuple[str, ...]
    done_file: str  # the job is done once this file exists
    needs: tuple[str, ...] = ()  # carried paths it reads
    minimum_s: int = 60  # a job is not started with less time left than this
    progress: str = field(default="", compare=False)  # a glob of partial outputs, counted for --dry-run


PEERS_DIR = "results/bench/gpu/three_peers/queue"
DETERMINISM_DIR = "results/bench/gpu/determinism"
DISCO = "results/disco103_judged"
TALPO_RUN = "results/talpo_minatar_tuned/gpu/run"
BOARD = "results/leaderboard/gpu"

JOBS = (
    Job("three_peers", "CartPole PPO's steps/s against rejax and PureJaxRL, alternating: 1 seed, 16 seeds, a "
                       "population, compile seconds (bench --peers)",
        f"mkdir -p {PEERS_DIR} && METADISCO_PUREJAXRL=$PWD/.peers/purejaxrl timeout --signal=TERM $LIMIT python3 -m "
        f"metadisco bench --peers --only-peers --peer-figures ppo --purejaxrl .peers/purejaxrl --repeats 3 "
        f"--out {PEERS_DIR}/gpu_peers.json --no-progress 2>&1 | tee {PEERS_DIR}/bench_peers.log",
        (PEERS_DIR,), f"{PEERS_DIR}/gpu_peers.json", needs=(".whl", ".peers/purejaxrl"), minimum_s=300),
    Job("determinism", "the quickstart twice with deterministic GPU kernels and once without: bits compared, the "
                       "flag's cost in seconds",
        f"timeout --signal=TERM $LIMIT bash results/gpu_queue/determinism.sh {DETERMINISM_DIR}", (DETERMINISM_DIR,),
        f"{DETERMINISM_DIR}/determinism.json", needs=(".whl",), minimum_s=240),
    Job("disco103", "Disco103 judged with every method's lr tuned, the envs left: SpaceInvaders, Asterix, Freeway "
                    "at 1e6 (evaluate --resume, cell by cell)",
        f"PIECE_TIMEOUT=$LIMIT bash {DISCO}/run.sh", (f"{DISCO}/eval", f"{DISCO}/eval.txt"),
        f"{DISCO}/eval/eval.json", needs=(".whl", "runs/disco103.msgpack"), minimum_s=120,
        progress=f"{DISCO}/eval/cells/*.json"),
    Job("talpo_gpu", "the TA-LPO GPU campaign (experiments/talpo_minatar_tuned_gpu.yaml), generation by generation "
                     "(meta-train --resume)",
        f"timeout --signal=TERM $LIMIT python3 -m metadisco --no-progress --no-compile-cache meta-train "
        f"experiments/talpo_minatar_tuned_gpu.yaml --out {TALPO_RUN} $( [ -d {TALPO_RUN}/checkpoints ] && echo "
        f"--resume ) 2>&1 | tee -a results/talpo_minatar_tuned/gpu/pieces.log",
        (TALPO_RUN, "results/talpo_minatar_tuned/gpu/pieces.log"), f"{TALPO_RUN}/objective.msgpack",
        needs=(".whl",), minimum_s=180, progress=f"{TALPO_RUN}/checkpoints/*"),
    Job("leaderboard_gpu", "the gpu suite's board (MinAtar at 1e7, Brax at 5e7, Catch), cell by cell "
                           "(metadisco leaderboard --suite gpu)",
        f"mkdir -p {BOARD} && timeout --signal=TERM $LIMIT python3 -m metadisco --no-compile-cache leaderboard "
        f"--suite gpu --out {BOARD} 2>&1 | tee -a results/leaderboard/gpu.txt",
        (BOARD, "results/leaderboard/gpu.txt"), f"{BOARD}/board.json", needs=(".whl", "runs/disco103.msgpack"),
        minimum_s=180, progress=f"{BOARD}/cells/*.json"),
)


def pending(root: Path = ROOT) -> list[Job]:
    """The jobs not done yet, in priority order."""
    return [job for job in JOBS if not (root / job.done_file).exists()]


def status_line(job: Job, root: Path = ROOT) -> str:
    if (root / job.done_file).exists():
        return f"done     {job.name}: {job.done_file}"
    partial = len(list(root.glob(job.progress))) if job.progress else 0
    missing = [path for path in job.needs if not (root / path).exists()]
    what = f" ({partial} files of it so far)" if partial else ""
    carry = f"; not here to carry: {', '.join(missing)} (--prepare)" if missing else ""
    return f"pending  {job.name}{what}: {job.summary}{carry}"


def dry_run(root: Path = ROOT, seconds: int = PIECE_SECONDS) -> list[str]:
    """What the next piece would do, as lines: every job's state, then the commands in order."""
    lines = [status_line(job, root) for job in JOBS]
    jobs = pending(root)
    if not jobs:
        return [*lines, "nothing pending: the queue is empty"]
    lines.append(f"the next piece ({seconds} s) runs, while time is left:")
    lines += [f"  {job.name} (at least {job.minimum_s} s): {job.command}" for job in jobs]
    lines.append(f"carry: {', '.join(CARRY)}; it returns gpu_queue.tgz of: "
                 f"{', '.join(path for job in jobs for path in job.outputs)}")
    return lines


def prepare(root: Path = ROOT) -> None:
    """Make what a piece carries: the wheels (results/bench/gpu/wheels.sh), PureJaxRL's checkout in .peers/ (when
    a copy is at hand: $METADISCO_PUREJAXRL) and Disco103's imported objective in runs/."""
    subprocess.run(["bash", "results/bench/gpu/wheels.sh"], cwd=root, check=True)
    source = os.environ.get("METADISCO_PUREJAXRL")
    target = root / ".peers" / "purejaxrl"
    if source and not target.exists():
        target.parent.mkdir(exist_ok=True)
        subprocess.run(["cp", "-r", source, str(target)], check=True)
    if not target.exists():
        print("no .peers/purejaxrl: set METADISCO_PUREJAXRL to the purejaxrl/ folder of a PureJaxRL checkout")
    rule = root / "runs" / "disco103.msgpack"
    if not rule.exists():
        weights = root.parent / "shared" / "data" / "disco103" / "disco_103.npz"
        (root / "runs").mkdir(exist_ok=True)
        subprocess.run(["metadisco", "import", "--format", "disco103", str(weights), "--out", str(rule)],
                       cwd=root, check=True)


def run_piece(root: Path, out: Path, seconds: int) -> int:
    """Run the pending jobs in order while time is left; pack every job's outputs into out/gpu_queue.tgz."""
    start = time.monotonic()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    prelude = "set -u; . results/bench/gpu/env.sh; mkdir -p /tmp/bin && printf '#!/bin/sh\\nexec python3 -m " \
              "metadisco \"$@\"\\n' > /tmp/bin/metadisco && chmod +x /tmp/bin/metadisco; export PATH=/tmp/bin:$PATH; "
    ran, log = [], {}
    for job in pending(root):
        left = int(seconds - (time.monotonic() - start))
        if left < job.minimum_s:
            log[job.name] = f"not started: {left} s left, it needs {job.minimum_s}"
            continue
        t0 = time.monotonic()
        command = prelude + f"export OUT={shlex.quote(str(out))} LIMIT={left - 15}; {job.command}"
        rc = subprocess.run(["bash", "-c", command], cwd=root, env=env).returncode
        log[job.name] = f"rc {rc} after {time.monotonic() - t0:.0f} s"
        ran.append(job)
        print(f"=== {job.name}: {log[job.name]}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    note = root / "results" / "gpu_queue" / "last_piece.json"
    partial = note.with_suffix(".json.tmp")  # written whole, then renamed: a cut piece leaves no half file
    partial.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "jobs": log}, indent=2) + "\n")
    partial.replace(note)
    with tarfile.open(out / "gpu_queue.tgz", "w:gz") as tar:
        tar.add(note, arcname=str(note.relative_to(root)))
        for job in ran:
            for path in job.outputs:
                if (root / path).exists():
                    tar.add(root / path, arcname=path)
    print(f"packed {out / 'gpu_queue.tgz'}: {', '.join(job.name for job in ran) or 'no job ran'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="list each job's state and what the next piece runs")
    parser.add_argument("--prepare", action="store_true", help="make what a piece carries (run here)")
    parser.add_argument("--seconds", type=int, default=PIECE_SECONDS, help=f"a piece's time (default {PIECE_SECONDS})")
    args = parser.parse_args(argv)
    if args.seconds < 60:
        parser.error(f"--seconds must be at least 60 (a piece's time), got {args.seconds}")
    if args.dry_run:
        print("\n".join(dry_run(ROOT, args.seconds)))
        return 0
    if args.prepare:
        prepare(ROOT)
        return 0
    return run_piece(ROOT, Path(os.environ.get("OUT", "/tmp/out")), args.seconds)


if __name__ == "__main__":
    sys.exit(main())
