"""`metadisco inspect` and `metadisco train --objective FILE` with objective files."""

import json

import jax
import pytest

from metadisco.cli import main
from metadisco.objectives import DRIFTS, OPTIMIZERS, VALUE_LOSSES, Objective, save_objective


def test_inspect_a_learned_objective_file(tmp_path, capsys):
    objective = Objective(drift=DRIFTS.make("lpo"), value_loss=VALUE_LOSSES.make("learned"),
                          optimizer=OPTIMIZERS.make("learned", hidden=(8,)))
    meta = jax.tree.map(lambda x: x + 0.5, objective.zero_meta())
    path = save_objective(tmp_path / "o.msgpack", objective, meta)
    assert main(["inspect", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    drift = info["pieces"]["drift"]
    assert drift["kind"] == "lpo" and drift["parameters"] == 8 * 128 + 128 and drift["shapes"]["w1"] == [8, 128]
    assert abs(drift["norm"] - 0.5 * (8 * 128 + 128) ** 0.5) < 1e-3
    assert info["pieces"]["value_loss"]["parameters"] == (64 + 64) + (64 * 64 + 64) + (64 + 1)
    assert info["pieces"]["optimizer"]["options"]["hidden"] == [8]
    assert info["parameters"] == sum(p["parameters"] for p in info["pieces"].values())
    assert main(["inspect", str(path)]) == 0
    assert "lpo" in capsys.readouterr().out


def test_inspect_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "bad.msgpack").write_bytes(b"\x93garbage")
    assert main(["inspect", str(tmp_path / "bad.msgpack")]) == 2
    err = capsys.readouterr().err
    assert "damaged" in err and err.count("\n") == 1
    assert main(["inspect", "lpoo"]) == 2


@pytest.mark.slow  # 17 s on 2 cores
def test_train_runs_an_objective_file(tmp_path):
    objective = Objective(drift=DRIFTS.make("dpo", alpha=1.5))
    path = save_objective(tmp_path / "dpo.msgpack", objective, objective.zero_meta())
    out = tmp_path / "run"
    argv = ["train", "--env", "CartPole-v1", "--objective", str(path), "--timesteps", "512", "--out", str(out),
            "--set", "num_steps=32", "--set", "hidden_sizes=8,8", "--set", "update_epochs=1"]
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["objective_spec"]["drift"] == {"kind": "dpo", "alpha": 1.5, "beta": 0.6}
    assert len(summary["final_return"]) == 1
