"""`metadisco export OBJECTIVE --format discobench|jax --out DIR`: files written from a built-in name, an objective
file and a run directory, that import from the output directory alone and compute what the objective computes;
bad input is one line and status 2, and nothing is written."""

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.cli import main
from metadisco.objectives import DRIFTS, OPTIMIZERS, VALUE_LOSSES, DriftInputs, Objective, Progress, save_objective
from metadisco.objectives.registry import ValueLossInputs


def load(path):
    spec = importlib.util.spec_from_file_location(f"exported_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_export_an_objective_file_and_a_run_directory(tmp_path, capsys):
    objective = Objective(drift=DRIFTS.make("lpo", hidden=16), value_loss=VALUE_LOSSES.make("learned", hidden=(8,)))
    leaves, tree = jax.tree.flatten(objective.zero_meta())
    keys = jax.random.split(jax.random.PRNGKey(0), len(leaves))
    meta = jax.tree.unflatten(tree, [0.3 * jax.random.normal(k, x.shape) for k, x in zip(keys, leaves, strict=True)])
    run = tmp_path / "run"
    run.mkdir()
    path = save_objective(run / "objective.msgpack", objective, meta)
    assert main(["export", str(path), "--format", "jax", "--out", str(tmp_path / "jax")]) == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / "jax" / "objective.py"),
                                               str(tmp_path / "jax" / "README.md")]
    module = load(tmp_path / "jax" / "objective.py")
    ratio = jnp.exp(jnp.linspace(-2.0, 2.0, 257))
    adv = jnp.sin(jnp.arange(257.0)) * 3.0
    progress = Progress(jnp.float32(0.3), jnp.float32(100.0))
    np.testing.assert_array_equal(np.asarray(module.drift(ratio, adv)),
                                  np.asarray(objective.drift(meta["drift"], DriftInputs(ratio, adv), progress)))
    value, target = adv, jnp.cos(jnp.arange(257.0)) * 10.0
    np.testing.assert_array_equal(
        np.asarray(module.value_loss(value, value, target)),
        np.asarray(objective.value_loss(meta["value_loss"], ValueLossInputs(value, value, target), progress)))
    readme = (tmp_path / "jax" / "README.md").read_text()
    assert str(path) in readme and '"kind": "lpo"' in readme

    assert main(["export", str(run), "--format", "discobench", "--out", str(tmp_path / "db")]) == 0
    assert sorted(p.name for p in (tmp_path / "db").iterdir()) == ["README.md", "loss.py"]
    assert "def loss_actor_and_critic(params, traj_batch, gae, targets, network, config):" in \
        (tmp_path / "db" / "loss.py").read_text()


def test_export_replaces_its_own_files_and_keeps_others(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "loss.py").write_text("old")
    assert main(["export", "dpo", "--format", "discobench", "--out", str(out)]) == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert "soft_hinge" in (out / "loss.py").read_text()
    assert main(["export", "ppo", "--format", "discobench", "--out", str(out)]) == 0
    assert "soft_hinge" not in (out / "loss.py").read_text()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_export_refusals_are_one_line_and_write_nothing(tmp_path, capsys):
    learned_opt = Objective(optimizer=OPTIMIZERS.make("learned", hidden=(4,)))
    path = save_objective(tmp_path / "opt.msgpack", learned_opt, learned_opt.zero_meta())
    open_opt = Objective(optimizer=OPTIMIZERS.make("open"))
    open_path = save_objective(tmp_path / "open.msgpack", open_opt, open_opt.zero_meta())
    for argv, words in (([str(path), "--format", "jax"], "optimizer 'learned' cannot be exported"),
                        ([str(open_path), "--format", "discobench"], "cannot enter DiscoBench's optim.py"),
                        (["pqn", "--format", "discobench"], "algorithm pqn, which has no export"),
                        (["ppoo", "--format", "jax"], "ppo")):
        out = tmp_path / "never"
        assert main(["export", *argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
        assert not out.exists()
