"""PQN from the command line: train the built-in `pqn`; meta-train a learned TD loss and trace from YAML for two
generations; its objective file through `inspect`, `evaluate --baselines pqn` (and against PPO) and `plot`."""

import json

import pytest
import yaml

from metadisco.cli import main
from metadisco.objectives import load_objective

TRAIN = {"num_envs": 4, "num_steps": 16, "hidden_sizes": [8, 8], "num_minibatches": 2, "update_epochs": 2}
TD_CONFIG = {
    "objective": {"value_loss": {"kind": "learned", "hidden": [8]}, "optimizer": {"kind": "radam"},
                  "trace": {"kind": "learned", "hidden": [4]}},
    "tasks": [{"env": "CartPole-v1", "timesteps": 256, "seeds": 1, "train": TRAIN}],
    "strategy": {"name": "Open_ES", "population_size": 4, "sigma_init": 0.1, "lr": 0.05},
    "generations": 2,
    "eval_every": 100,
    "held_out_envs": ["Acrobot-v1"],
}
SETS = [arg for k, v in TRAIN.items()
        for arg in ("--set", f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}")]


@pytest.fixture(scope="module")
def td_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("td")
    (root / "config.yaml").write_text(yaml.safe_dump(TD_CONFIG))
    assert main(["meta-train", str(root / "config.yaml"), "--out", str(root / "run")]) == 0
    return root / "run"


@pytest.mark.slow  # 38 s on 2 cores
def test_meta_train_a_learned_td_loss_from_yaml(td_run):
    lines = [json.loads(x) for x in (td_run / "metrics.jsonl").read_text().splitlines()]
    assert [x["generation"] for x in lines] == [0, 1]
    assert all(x["fitness_mean"] == x["fitness_mean"] for x in lines)  # finite, not NaN
    objective, meta = load_objective(td_run / "objective.msgpack")
    assert objective.algorithm == "pqn" and objective.trace.name == "learned"
    assert objective.value_loss.name == "learned" and any(abs(x).max() > 0 for x in
                                                           __import__("jax").tree.leaves(meta["trace"]))
    resolved = yaml.safe_load((td_run / "config.yaml").read_text())
    assert resolved["objective"]["trace"]["kind"] == "learned"


@pytest.mark.heavy
@pytest.mark.slow  # 43 s on 2 cores
def test_inspect_evaluate_and_plot_the_td_objective(td_run, tmp_path, capsys):
    objective_file = str(td_run / "objective.msgpack")
    assert main(["inspect", objective_file, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["pieces"]["trace"]["kind"] == "learned" and info["pieces"]["trace"]["parameters"] == 2 * 4 + 4 + 5
    assert info["parameters"] == sum(p["parameters"] for p in info["pieces"].values())

    out = tmp_path / "eval"
    assert main(["evaluate", objective_file, "--envs", "CartPole-v1", "--seeds", "2", "--timesteps", "256",
                 "--baselines", "pqn", *SETS, "--no-progress", "--out", str(out)]) == 0
    report = json.loads((out / "eval.json").read_text())
    assert report["settings"]["baselines"] == ["pqn"]
    assert report["settings"]["configs"]["CartPole-v1"]["algorithm"] == "pqn"
    assert len(report["envs"]["CartPole-v1"]["pqn"]["final_return"]) == 2
    # A TD objective judged against PPO: each method trains with its own algorithm, and eval.json says which.
    mixed = tmp_path / "mixed"
    assert main(["evaluate", objective_file, "--envs", "CartPole-v1", "--seeds", "2", "--timesteps", "256",
                 "--baselines", "ppo", *SETS, "--no-progress", "--out", str(mixed)]) == 0
    report = json.loads((mixed / "eval.json").read_text())
    assert report["settings"]["configs"]["CartPole-v1"]["algorithm"] == "pqn"
    assert report["settings"]["other_algorithms"]["ppo"]["CartPole-v1"]["algorithm"] == "ppo"
    assert len(report["envs"]["CartPole-v1"]["ppo"]["final_return"]) == 2

    figures = tmp_path / "fig"
    assert main(["plot", objective_file, "--out", str(figures)]) == 0
    names = {p.name for p in figures.iterdir()}
    assert {"trace.png", "value_loss.png", "optimizer.png"} <= names
    assert not any(n.startswith("drift") for n in names)  # PQN never calls the drift


@pytest.mark.slow  # 14 s on 2 cores
def test_train_the_builtin_pqn(tmp_path):
    out = tmp_path / "run"
    assert main(["train", "--env", "CartPole-v1", "--objective", "pqn", "--timesteps", "256", *SETS,
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["algorithm"] == "pqn" and summary["config"]["eps_finish"] == 0.2  # the pqn_classic preset
    assert summary["objective_spec"]["trace"] == {"kind": "peng"}


def test_distil_refuses_a_td_objective(tmp_path, capsys):
    assert main(["distil", "pqn", "--method", "parametric", "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no drift to distil" in err
