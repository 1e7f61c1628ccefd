"""A learned TD loss on the command line: `metadisco plot` draws it against the TD error at fixed Q beside DQN's and
DQNReg's (no drift figures: DQN has no policy), and `metadisco distil` fits it to DQNReg's family and writes DQNReg
at the fitted weight, for DQN, as an objective file that loads; a DQNReg-shaped residual distils to its weight."""

import json

import jax
import numpy as np
import pytest

from metadisco.cli import main
from metadisco.objectives import VALUE_LOSSES, Objective, load_objective, save_objective


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def objective_file(tmp_path):
    piece = VALUE_LOSSES.make("learned_td", hidden=(4,))
    objective = Objective(value_loss=piece, algorithm="dqn")
    meta = objective.zero_meta()
    # The zero network is DQN's loss, whose closed form is known; a moved one has some other shape.
    path = tmp_path / "td.msgpack"
    save_objective(path, objective, meta)
    moved = tmp_path / "td_moved.msgpack"
    save_objective(moved, objective, {**meta, "value_loss": jax.tree.map(
        lambda x: x + 0.1, piece.start_meta(jax.random.PRNGKey(0), 1.0))})
    return path, moved


def test_plot_draws_the_td_loss_and_no_drift(objective_file, tmp_path, capsys):
    _, moved = objective_file
    code, _, err = run_cli(capsys, "plot", str(moved), "--out", str(tmp_path / "fig"))
    assert code == 0, err
    drawn = sorted(p.name for p in (tmp_path / "fig").glob("*.png"))
    assert "td_loss.png" in drawn and not any(name.startswith("drift") for name in drawn)


def test_distil_fits_dqnregs_family_and_writes_an_objective_for_dqn(objective_file, tmp_path, capsys):
    path, moved = objective_file
    code, out, err = run_cli(capsys, "distil", str(path), "--out", str(tmp_path / "d0"))
    assert code == 0, err
    result = json.loads((tmp_path / "d0" / "distilled.json").read_text())
    assert result["method"] == "td_closed_form" and result["r2"] > 1 - 1e-6
    np.testing.assert_allclose([result["fit"]["a"], result["dqn_reg_weight"]], [0.5, 0.0], atol=1e-4)  # DQN's loss
    objective, _ = load_objective(tmp_path / "d0" / "distilled.msgpack")
    assert objective.algorithm == "dqn" and objective.value_loss.name == "dqn_reg"
    assert "DQNReg weight" in out + err
    code, _, err = run_cli(capsys, "distil", str(moved), "--out", str(tmp_path / "d1"))
    fit = json.loads((tmp_path / "d1" / "distilled.json").read_text())["fit"]
    assert code == 0 and 0.0 <= fit["r2"] <= 1.0 + 1e-6
    code, _, err = run_cli(capsys, "distil", str(path), "--method", "symbolic", "--out", str(tmp_path / "d2"))
    assert code == 2 and "drop --method symbolic" in err and not (tmp_path / "d2").exists()


def test_a_value_loss_piece_that_reads_no_target_parts_keeps_its_figure(tmp_path, capsys):
    objective = Objective(value_loss=VALUE_LOSSES.make("dqn_reg"), algorithm="dqn")
    path = tmp_path / "reg.msgpack"
    save_objective(path, objective, objective.zero_meta())
    assert run_cli(capsys, "plot", str(path), "--out", str(tmp_path / "fig"))[0] == 0
    assert (tmp_path / "fig" / "value_loss.png").exists()
