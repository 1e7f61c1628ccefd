"""Meta-training across processes: SIGKILL at a random point then `--resume` ends byte-identical to an
uninterrupted run; two processes on 127.0.0.1 (gloo collectives) agree with one process.

The subprocesses inherit conftest's environment (4 CPU devices, the persistent compilation cache), so they
run the same compiled programs as the in-process reference runs.
"""

from __future__ import annotations

import json
import os
import socket

import pytest
import yaml
from processes import TIMEOUT, kill_at_random_point, line_count, start_metadisco
from tiny_meta import fitness_columns, read_metrics, tiny

from metadisco.meta.loop import meta_train


def cli(config_path, out, *extra, env=None):
    return start_metadisco(["meta-train", str(config_path), "--out", str(out), *extra], env=env)


def finish(proc) -> str:
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err[-2000:]
    return err


def test_sigkill_then_resume_is_byte_identical(tmp_path):
    config = tiny(generations=24, eval_every=4)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    reference = tmp_path / "reference"
    meta_train(config, reference, progress=False)

    run = tmp_path / "run"
    proc = cli(config_path, run)
    kill_at_random_point(proc, run / "metrics.jsonl", 8, 0.05)  # 1-8 generations logged, then inside the next
    assert line_count(run / "metrics.jsonl") < 24

    finish(cli(config_path, run, "--resume"))
    assert (run / "objective.msgpack").read_bytes() == (reference / "objective.msgpack").read_bytes()
    assert fitness_columns(read_metrics(run)) == fitness_columns(read_metrics(reference))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_agree_with_one(tmp_path):
    config = tiny(generations=2, eval_every=1)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    run = tmp_path / "two"
    port = _free_port()
    procs = []
    for i in range(2):
        env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
               "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": str(i)}
        procs.append(cli(config_path, run, "--distributed", env=env))
    errs = [finish(p) for p in procs]
    assert "2 process(es)" in errs[0] and "over 4 device(s)" in errs[0]
    assert "meta-training" not in errs[1]  # only process 0 reports (and writes files)

    reference = tmp_path / "one"
    meta_train(config, reference, progress=False)  # one process, the same 4-device mesh
    assert fitness_columns(read_metrics(run)) == fitness_columns(read_metrics(reference))
    assert (run / "objective.msgpack").read_bytes() == (reference / "objective.msgpack").read_bytes()
    assert json.loads((run / "summary.json").read_text())["generations"] == 2


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
