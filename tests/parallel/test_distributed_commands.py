"""Every command whose work is sharded over the one mesh runs across processes with `--distributed`: sweep,
evaluate, pbt and probe, as two processes of two devices each on 127.0.0.1 (gloo collectives), give exactly the
numbers of this process on its four devices (conftest's; the same mesh size, so the same programs), and only
process 0 prints and writes. meta-train's own two-process test is in `tests/meta/test_processes.py`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess

import jax
import pytest
import yaml
from processes import TIMEOUT, start_metadisco, xla_flags
from tiny_meta import tiny

from metadisco.cli import main

# One epoch of one minibatch, one hidden layer: the smallest trainer program (each of the three processes of a test
# compiles every program of its command; the distributed path does not depend on the trainer's size).
TRAIN = {"num_envs": 4, "num_steps": 16, "update_epochs": 1, "num_minibatches": 1, "hidden_sizes": [8]}
SWEEP = {"env": "CartPole-v1", "search": "grid", "num": 2, "seeds": 2, "timesteps": 384, "train": TRAIN,
         "space": {"lr": {"low": 1e-3, "high": 1e-2}}}
PBT = {"env": "CartPole-v1", "population": 4, "timesteps": 4 * 16 * 4, "seed": 3, "train": TRAIN,
       "space": {"lr": {"low": 1e-4, "high": 1e-1}}, "ready": {"kind": "every", "updates": 2},
       "exploit": {"kind": "truncation", "fraction": 0.25}, "explore": {"kind": "perturb", "factors": [0.8, 1.2]}}
# Two methods of one objective (one group: one compiled program) x 1 seed: 2 runs, on 2 devices in one process and
# padded over all 4 in two processes (`sharding.devices_for`).
EVAL = ["--envs", "CartPole-v1", "--baselines", "ppo_b=ppo", "--seeds", "1", "--timesteps", "384",
        *[x for k, v in TRAIN.items() if k != "hidden_sizes" for x in ("--set", f"{k}={v}")],
        "--set", "hidden_sizes=[8]"]
PROBE = tiny(tasks=[{"env": "CartPole-v1", "timesteps": 256, "seeds": 1, "train": {**TRAIN, "lr": 0.01}}])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(devices: int, **extra) -> dict:
    return {**os.environ, "XLA_FLAGS": xla_flags(devices), **extra}


def _command(name: str, tmp_path, out) -> list[str]:
    config = tmp_path / f"{name}.yaml"
    if name == "sweep":
        config.write_text(yaml.safe_dump(SWEEP))
        return ["sweep", str(config), "--out", str(out)]
    if name == "pbt":
        config.write_text(yaml.safe_dump(PBT))
        return ["pbt", str(config), "--out", str(out)]
    if name == "probe":
        config.write_text(yaml.safe_dump(PROBE))
        return ["probe", str(config), "--repeats", "2", "--out", str(out)]
    return ["evaluate", "ppo", *EVAL, "--out", str(out)]


def _result(name: str, out) -> object:
    """The numbers a command wrote, without timings."""
    if name == "sweep":
        return [p["final_return"] for p in json.loads((out / "sweep.json").read_text())["points"]]
    if name == "pbt":
        lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        return [(line["scores"], line["hyper"]) for line in lines]
    if name == "probe":
        report = json.loads(out.read_text())
        return report["combined"], {k: {s: v for s, v in t.items()} for k, t in report["tasks"].items()}
    report = json.loads((out / "eval.json").read_text())
    return {label: entry["final_return"] for label, entry in report["envs"]["CartPole-v1"].items()}


MARK = {"sweep": "sweep:", "pbt": "pbt:", "evaluate": "wrote", "probe": "probing"}  # a line each command prints


def _run(argv, env) -> subprocess.Popen:
    return start_metadisco([*argv, "--no-progress"], env=env)


@pytest.mark.heavy
@pytest.mark.slow  # 79 s on 2 cores
@pytest.mark.parametrize("name", ["sweep", "evaluate", "pbt", "probe"])
def test_two_processes_give_the_numbers_of_one_process_on_as_many_devices(name, tmp_path):
    is_file = name == "probe"  # probe's --out is a JSON file
    two = tmp_path / ("two.json" if is_file else "two")
    one = tmp_path / ("one.json" if is_file else "one")
    port = _free_port()
    procs = [_run([*_command(name, tmp_path, two), "--distributed"],
                  _env(2, JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", JAX_NUM_PROCESSES="2", JAX_PROCESS_ID=str(i)))
             for i in range(2)]
    outputs = [p.communicate(timeout=TIMEOUT) for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err[-2000:]
    assert MARK[name] in outputs[0][1] and MARK[name] not in outputs[1][1]  # only process 0 reports ...
    assert outputs[1][0] == ""  # ... and prints (probe's table goes to stdout)

    assert jax.device_count() == 4  # this process: the same mesh size as the two processes together
    assert main([*_command(name, tmp_path, one), "--no-progress"]) == 0
    assert _result(name, two) == _result(name, one)
    if not is_file:
        assert not (two / ".lock").exists()  # process 0 held the lock and let it go; process 1 never took it
