"""DQN from the command line: meta-train a learned TD loss around DQN's with paired fitness (DQN on the same keys
is the control), resume it, evaluate it against DQN (the default baseline of a DQN objective) and plot it."""

import json

import pytest
import yaml

from metadisco.cli import main
from metadisco.objectives import load_objective

TRAIN = {"num_envs": 4, "num_steps": 1, "hidden_sizes": [8], "buffer_size": 256, "buffer_batch": 16,
         "learning_starts": 64, "target_update_interval": 40, "eps_anneal_steps": 200}
CONFIG = {
    "objective": {"algorithm": {"kind": "dqn"}, "value_loss": {"kind": "learned", "hidden": [4]}},
    "tasks": [{"env": "CartPole-v1", "timesteps": 400, "seeds": 1, "train": TRAIN}],
    "normalise": "paired",
    "strategy": {"name": "Open_ES", "population_size": 4, "sigma_init": 0.1, "lr": 0.05},
    "fitness": "mean_return",
    "generations": 2,
    "eval_every": 100,
    "checkpoint_every": 1,
    "held_out_envs": ["Acrobot-v1"],
}

pytestmark = pytest.mark.slow  # about 60 s on 2 cores together


@pytest.fixture(scope="module")
def dqn_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("dqn")
    (root / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    assert main(["meta-train", str(root / "config.yaml"), "--out", str(root / "run")]) == 0
    return root


def test_meta_train_a_learned_td_loss_around_dqn_and_resume(dqn_run, capsys):
    run = dqn_run / "run"
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [x["generation"] for x in lines] == [0, 1]
    assert all(x["fitness_mean"] == x["fitness_mean"] for x in lines)  # finite, not NaN
    objective, _ = load_objective(run / "objective.msgpack")
    assert objective.algorithm == "dqn" and objective.value_loss.name == "learned"
    before = (run / "metrics.jsonl").read_text()
    assert main(["meta-train", str(dqn_run / "config.yaml"), "--out", str(run), "--resume",
                 "--set", "generations=3"]) == 0
    after = (run / "metrics.jsonl").read_text()
    assert after.startswith(before) and len(after.splitlines()) == 3
    assert "--baselines dqn" in capsys.readouterr().err


@pytest.mark.heavy
def test_evaluate_against_dqn_and_plot(dqn_run, tmp_path):
    sets = [a for k, v in TRAIN.items()
            for a in ("--set", f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}")]
    assert main(["evaluate", str(dqn_run / "run" / "objective.msgpack"), "--envs", "CartPole-v1@400", "--seeds", "2",
                 "--out", str(tmp_path / "eval"), *sets]) == 0
    report = json.loads((tmp_path / "eval" / "eval.json").read_text())
    assert report["settings"]["baselines"] == ["dqn"]
    assert report["settings"]["configs"]["CartPole-v1"]["algorithm"] == "dqn"
    assert main(["plot", str(dqn_run / "run"), "--out", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "value_loss.png").is_file()
