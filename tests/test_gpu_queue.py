"""The GPU queue (`results/gpu_queue/queue.py`): a job is pending until its done-file exists, the dry run lists every
job in priority order and what the next piece runs, and a piece on a machine with nothing carried runs the jobs it
has time for and packs what they wrote (here with commands that stand in for the GPU's, in a scratch root)."""

import importlib.util
import subprocess
import sys
import tarfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("gpu_queue", ROOT / "results" / "gpu_queue" / "queue.py")
queue = importlib.util.module_from_spec(SPEC)
sys.modules["gpu_queue"] = queue  # dataclasses look their module up
SPEC.loader.exec_module(queue)


def test_every_job_is_pending_until_its_done_file_exists(tmp_path):
    assert [job.name for job in queue.pending(tmp_path)] == [job.name for job in queue.JOBS]
    first = queue.JOBS[0]
    (tmp_path / first.done_file).parent.mkdir(parents=True)
    (tmp_path / first.done_file).write_text("{}")
    assert [job.name for job in queue.pending(tmp_path)] == [job.name for job in queue.JOBS[1:]]
    lines = queue.dry_run(tmp_path)
    jobs = len(queue.JOBS)
    assert lines[0].startswith(f"done     {first.name}") and all(line.startswith("pending") for line in lines[1:jobs])
    assert "the next piece" in lines[jobs] and lines[jobs + 1].lstrip().startswith(queue.JOBS[1].name)


def test_the_queue_is_in_priority_order_and_names_what_it_carries():
    assert [job.name for job in queue.JOBS] == ["three_peers", "determinism", "disco103", "talpo_gpu",
                                              "leaderboard_gpu"]
    for job in queue.JOBS:
        assert "$LIMIT" in job.command and job.outputs and set(job.needs) <= {".whl", ".peers/purejaxrl",
                                                                           "runs/disco103.msgpack"}
        assert any(need.split("/")[0] in queue.CARRY for need in job.needs)


def test_the_dry_run_prints_from_the_command_line():
    proc = subprocess.run([sys.executable, str(ROOT / "results" / "gpu_queue" / "queue.py"), "--dry-run"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "three_peers" in proc.stdout.splitlines()[0]
    bad = subprocess.run([sys.executable, str(ROOT / "results" / "gpu_queue" / "queue.py"), "--seconds", "5"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--seconds must be at least 60" in bad.stderr


def test_a_piece_runs_what_it_has_time_for_and_packs_its_outputs(tmp_path, monkeypatch):
    root, out = tmp_path / "root", tmp_path / "out"
    (root / "results" / "gpu_queue").mkdir(parents=True)
    (root / "results" / "bench" / "gpu").mkdir(parents=True)
    (root / "results" / "bench" / "gpu" / "env.sh").write_text("true\n")  # the machine's setup, here a no-op
    quick = replace(queue.JOBS[0], command="mkdir -p a && echo $LIMIT > a/done.json", outputs=("a",),
                    done_file="a/done.json", minimum_s=1)
    slow = replace(queue.JOBS[1], command="exit 1", outputs=("b",), done_file="b/done.json", minimum_s=10_000)
    monkeypatch.setattr(queue, "JOBS", (quick, slow))
    assert queue.run_piece(root, out, 120) == 0
    with tarfile.open(out / "gpu_queue.tgz") as tar:
        names = tar.getnames()
    assert "a/done.json" in names and "results/gpu_queue/last_piece.json" in names and "b" not in names
    assert 90 <= int((root / "a" / "done.json").read_text()) <= 105  # the job's limit: the piece's time left - 15
    assert [job.name for job in queue.pending(root)] == [slow.name]
