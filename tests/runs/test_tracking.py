"""Experiment tracking: `--track wandb` (offline) and `--track tensorboard` log the numbers of metrics.jsonl,
read back from the files they wrote; a tracker that fails is one warning and the run goes on."""

from __future__ import annotations

import glob
import json
import math
import struct
import warnings

import numpy as np
import pytest
import yaml
from processes import TIMEOUT, start_metadisco
from tiny_meta import read_metrics, tiny

from metadisco.cli import main
from metadisco.core.errors import MetadiscoWarning
from metadisco.runs.tracking import Tracking, flatten, open_tracking

# The smallest trainer program (one epoch of one minibatch, one hidden layer) for the runs below: what they test is
# the tracking of the numbers each round writes, not the trainer.
SMALL_TRAIN = {"num_envs": 4, "num_steps": 16, "update_epochs": 1, "num_minibatches": 1, "hidden_sizes": [8]}

pytest.importorskip("wandb")
pytest.importorskip("tensorboardX")


def _records(data: bytes, block: int, header: int):
    """The records of a LevelDB-style log (what both a .wandb file and, with another framing, an event file
    use): 7-byte record headers (checksum, length, type), records split across blocks by type."""
    pos, pending, out = header, b"", []
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0:
            break
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            out.append(pending)
    return out


def wandb_history(run_dir) -> list[dict[str, float]]:
    """The history rows of the offline wandb run under `run_dir`."""
    from wandb.proto import wandb_internal_pb2

    [path] = glob.glob(str(run_dir / "wandb" / "offline-run-*" / "run-*.wandb"))
    rows = []
    with open(path, "rb") as f:
        data = f.read()
    for raw in _records(data, 32768, 7):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(raw)
        if record.WhichOneof("record_type") == "history":
            rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                         for item in record.history.item})
    return rows


def tensorboard_scalars(run_dir) -> dict[str, dict[int, float]]:
    """{tag: {step: value}} of the event files under RUN_DIR/tensorboard (TFRecord framing: length, its CRC,
    data, its CRC)."""
    from tensorboardX.proto import event_pb2

    out: dict[str, dict[int, float]] = {}
    for path in glob.glob(str(run_dir / "tensorboard" / "events.out.tfevents.*")):
        with open(path, "rb") as f:
            data, pos = f.read(), 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            event = event_pb2.Event()
            event.ParseFromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for value in event.summary.value:
                out.setdefault(value.tag, {})[event.step] = value.simple_value
    return out


def test_flatten_keeps_numbers_and_joins_names():
    line = {"generation": 3, "fitness_mean": 1.5, "nan_count": 0, "returns": {"CartPole-v1": 120.0},
            "tasks": ["CartPole-v1@256"], "scores": [1.0, None, 2.0], "ok": True, "fitness_max": None,
            "fitness_min": float("nan")}
    flat = flatten(line)
    assert {k: v for k, v in flat.items() if k != "fitness_min"} == {
        "generation": 3.0, "fitness_mean": 1.5, "nan_count": 0.0, "returns/CartPole-v1": 120.0,
        "scores/0": 1.0, "scores/2": 2.0}
    assert math.isnan(flat["fitness_min"])


@pytest.mark.heavy
@pytest.mark.slow  # 22 s on 2 cores
def test_meta_train_tracks_every_generation_in_both(tmp_path):
    """In a child process, as a user runs it: wandb leaves threads and a service process behind in the process
    that used it, which a test worker would carry through every later test."""
    config = tmp_path / "config.yaml"
    task = {"env": "CartPole-v1", "timesteps": 256, "seeds": 1, "train": {**SMALL_TRAIN, "lr": 0.01}}
    config.write_text(yaml.safe_dump(tiny(generations=3, tasks=[task])))
    out = tmp_path / "run"
    proc = start_metadisco(["meta-train", str(config), "--out", str(out), "--no-progress",
                            "--track", "wandb", "--track", "tensorboard"])
    _, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, stderr
    lines = read_metrics(out)
    history = wandb_history(out)
    assert [row["_step"] for row in history] == [line["generation"] for line in lines]
    for row, line in zip(history, lines, strict=True):
        assert row["fitness_mean"] == pytest.approx(line["fitness_mean"], rel=1e-12)
        assert row["returns/CartPole-v1"] == pytest.approx(line["returns"]["CartPole-v1"], rel=1e-12)
    scalars = tensorboard_scalars(out)
    assert scalars["fitness_mean"] == pytest.approx({line["generation"]: line["fitness_mean"] for line in lines},
                                                    rel=1e-6)  # event files hold float32
    assert set(scalars["env_steps"]) == {0, 1, 2}


def test_train_tracks_every_update(tmp_path):
    out = tmp_path / "train"
    assert main(["train", "--env", "CartPole-v1", "--seeds", "2", "--timesteps", "512", "--out", str(out),
                 *[x for k, v in SMALL_TRAIN.items() for x in ("--set", f"{k}={v}")],
                 "--track", "tensorboard"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    scalars = tensorboard_scalars(out)
    updates = len(summary["return_curve"])
    assert updates == summary["timesteps"] // 64
    assert sorted(scalars["env_steps"]) == list(range(updates))
    assert scalars["env_steps"][updates - 1] == updates * 64
    curve = [scalars["episode_return"].get(u, np.nan) for u in range(updates)]
    np.testing.assert_allclose(curve, summary["return_curve"], rtol=1e-6)


def test_a_failing_tracker_is_one_warning_and_the_run_goes_on(tmp_path):
    class Broken:
        def log(self, step, numbers):
            raise ConnectionError("service unreachable")

        def close(self):
            pass

    tracking = open_tracking(["tensorboard"], tmp_path)
    tracking.start()
    tracking.trackers["broken"] = Broken()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            tracking.log(step, {"x": float(step)})
        tracking.close()
    messages = [str(w.message) for w in caught if issubclass(w.category, MetadiscoWarning)]
    assert len(messages) == 1 and "tracking with broken stopped" in messages[0]
    assert tensorboard_scalars(tmp_path)["x"] == {0: 0.0, 1: 1.0, 2: 2.0}  # the other tracker kept logging


def test_unknown_tracker_is_refused_before_work(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(tiny()))
    assert main(["meta-train", str(config), "--out", str(tmp_path / "run"), "--track", "mlflow"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--track" in err[0] and "wandb" in err[0] and "tensorboard" in err[0]
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_tracking_is_a_callback_without_a_run_directory():
    tracking = Tracking()
    tracking.on_generation({"generation": 0, "fitness_mean": 1.0}, None)  # nothing to log to: no error
    tracking.on_end(None, None)
    assert tracking.trackers == {}


def test_pbt_tracks_every_round(tmp_path):
    config = tmp_path / "pbt.yaml"
    config.write_text(yaml.safe_dump({
        "env": "CartPole-v1", "population": 4, "timesteps": 4 * 16 * 4, "seed": 3,
        "train": SMALL_TRAIN,
        "space": {"lr": {"low": 1e-4, "high": 1e-1}}, "ready": {"kind": "every", "updates": 2},
        "exploit": {"kind": "truncation", "fraction": 0.25}, "explore": {"kind": "perturb", "factors": [0.8, 1.2]}}))
    out = tmp_path / "pbt"
    assert main(["pbt", str(config), "--out", str(out), "--no-progress", "--track", "tensorboard"]) == 0
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    scalars = tensorboard_scalars(out)
    assert scalars["env_steps"] == {line["round"]: line["env_steps"] for line in lines}
    assert scalars["scores/0"] == pytest.approx({line["round"]: line["scores"][0] for line in lines}, rel=1e-6)
