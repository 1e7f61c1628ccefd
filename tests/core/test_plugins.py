"""Plugins: a researcher's own drift, defined in a module outside the package (tests/plugin_example.py), is
meta-trained from a YAML config that names it (`plugins:`), then evaluated, inspected and plotted through the
command line; installed packages' entry points; the one-line errors of a plugin that is missing; and the
pieces' own ES start points (`start_meta`), bit-identical to the key-name guessing they replaced."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

from metadisco.cli import main
from metadisco.core import plugins
from metadisco.core.checkpoint import config_digest
from metadisco.core.errors import UserError
from metadisco.meta.load import load_config, parse_config
from metadisco.meta.start import start_point
from metadisco.objectives import DRIFTS, OPTIMIZERS, VALUE_LOSSES, Objective, load_objective

ROOT = Path(__file__).resolve().parents[2]
# The smallest trainer program (one epoch of one minibatch, one hidden layer): the plugin's path through meta-training
# and evaluation does not depend on the trainer's size.
TINY_TRAIN = {"num_envs": 4, "num_steps": 16, "hidden_sizes": [8], "num_minibatches": 1, "update_epochs": 1,
              "lr": 0.01}
TINY_SET = ["num_envs=4", "num_steps=16", "hidden_sizes=8", "update_epochs=1", "num_minibatches=1"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """Two generations of meta-training of the plugin's drift, from a YAML config that loads the plugin."""
    root = tmp_path_factory.mktemp("plugin_run")
    config = {
        "plugins": ["plugin_example"],
        "objective": {"drift": {"kind": "scaled_ppo"}},
        "tasks": [{"env": "CartPole-v1", "timesteps": 256, "seeds": 1, "train": TINY_TRAIN}],
        "strategy": {"name": "Open_ES", "population_size": 4, "sigma_init": 0.1, "lr": 0.05},
        "generations": 2,
        "eval_every": 100,
        "held_out_envs": ["Acrobot-v1"],
    }
    (root / "plugin.yaml").write_text(yaml.safe_dump(config))
    out = root / "run"
    assert main(["meta-train", str(root / "plugin.yaml"), "--out", str(out)]) == 0
    return out


@pytest.mark.slow  # 21 s on 2 cores
def test_a_plugin_drift_meta_trains_and_its_file_names_the_plugin(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["generation"] for line in lines] == [0, 1]
    assert "plugins: [plugin_example]" in (run_dir / "config.yaml").read_text()
    objective, meta = load_objective(run_dir / "objective.msgpack")
    assert objective.to_spec()["drift"] == {"kind": "scaled_ppo", "plugin": "plugin_example", "eps": 0.2}
    assert objective.plugins() == {"drift": "plugin_example"}
    assert np.ndim(meta["drift"]["w"]) == 0 and np.isfinite(meta["drift"]["w"])


def test_inspect_names_the_plugin(run_dir, capsys):
    assert main(["inspect", str(run_dir), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["pieces"]["drift"]["plugin"] == "plugin_example"
    assert info["pieces"]["value_loss"]["plugin"] is None
    assert main(["inspect", str(run_dir / "objective.msgpack")]) == 0
    assert "scaled_ppo" in (out := capsys.readouterr().out) and "(plugin plugin_example)" in out


@pytest.mark.heavy
@pytest.mark.slow  # 41 s on 2 cores
def test_evaluate_and_plot_a_plugin_objective(run_dir, tmp_path):
    out = tmp_path / "eval"
    assert main(["evaluate", str(run_dir), "--plugin", "plugin_example", "--envs", "CartPole-v1", "--seeds", "2",
                 "--timesteps", "1024", "--no-progress", *[x for kv in TINY_SET for x in ("--set", kv)],
                 "--out", str(out)]) == 0
    report = json.loads((out / "eval.json").read_text())
    assert list(report["envs"]["CartPole-v1"]) == ["run", "ppo"]
    assert report["settings"]["methods"]["run"]["spec"]["drift"]["plugin"] == "plugin_example"
    assert main(["plot", str(run_dir), "--out", str(tmp_path / "figures")]) == 0
    assert (tmp_path / "figures" / "drift_slices_linear.png").read_bytes()[:4] == b"\x89PNG"


def test_an_objective_file_whose_plugin_is_not_loaded_is_one_line(run_dir, monkeypatch, capsys):
    monkeypatch.delitem(DRIFTS._pieces, "scaled_ppo")
    with pytest.raises(UserError, match="plugin module 'plugin_example', which is not loaded; load it with "
                                        "--plugin plugin_example"):
        load_objective(run_dir / "objective.msgpack")
    assert main(["inspect", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--plugin plugin_example" in err


def test_plugin_errors_are_one_line(tmp_path, capsys):
    assert main(["inspect", "ppo", "--plugin", "no_such_plugin_module"]) == 2
    err = capsys.readouterr().err
    assert "cannot import plugin module 'no_such_plugin_module'" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "broken_plugin.py").write_text("import no_such_dependency_xyz\n")
    assert main(["--plugin", str(tmp_path / "broken_plugin.py"), "inspect", "ppo"]) == 2
    assert "failed to load: ModuleNotFoundError" in capsys.readouterr().err
    with pytest.raises(UserError, match="plugin 'nope.py'|no plugin file 'nope.py'"):
        parse_config({"plugins": ["nope.py"]})


def test_a_plugin_given_as_a_file_and_its_env(tmp_path, capsys):
    (tmp_path / "file_plugin.py").write_text(
        "from dataclasses import dataclass\n"
        "from metadisco.objectives import VALUE_LOSSES, Piece\n"
        "from metadisco.objectives.value_loss import l2_value_loss\n\n"
        "@VALUE_LOSSES.register('half_l2')\n@dataclass(frozen=True)\nclass HalfL2(Piece):\n"
        "    def __call__(self, meta, inputs, progress):\n"
        "        return 0.5 * l2_value_loss(inputs.value, inputs.target)\n")
    assert main(["inspect", "ppo", "--plugin", str(tmp_path / "file_plugin.py")]) == 0
    assert VALUE_LOSSES.get("half_l2").__module__ == "file_plugin"
    import plugin_example  # noqa: F401 (registers its env too)

    from metadisco.envs import check_env_id, env_ids, make_env

    assert check_env_id("PluginCartPole-v0") == "PluginCartPole-v0" and "PluginCartPole-v0" in env_ids()
    assert make_env("PluginCartPole-v0").spec.action_size == 2


def test_installed_packages_register_through_the_entry_point_group(tmp_path, monkeypatch):
    (tmp_path / "installed_plugin.py").write_text(
        "from dataclasses import dataclass\n"
        "from metadisco.objectives import OPTIMIZERS\n"
        "from metadisco.objectives.optimizer import Adam\n\n"
        "@OPTIMIZERS.register('installed_adam')\n@dataclass(frozen=True)\nclass InstalledAdam(Adam):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    group = plugins.ENTRY_POINT_GROUP
    fake = [importlib.metadata.EntryPoint("mine", "installed_plugin", group)]
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: fake if group == plugins.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(plugins, "_entry_points_loaded", False)
    assert group == "metadisco.plugins" and "installed_adam" not in OPTIMIZERS.names()
    piece = OPTIMIZERS.make("installed_adam")  # an unknown name loads the entry points first
    assert piece.plugin == "installed_plugin" and "installed_plugin" in plugins.loaded_plugins()
    assert Objective.from_spec(Objective(optimizer=piece).to_spec()).optimizer == piece
    sys.modules.pop("installed_plugin", None)


# ---------------------------------------------------------------------------------------------------------
# start_meta: each piece's own ES start point


def _digest(tree) -> str:
    h = hashlib.sha256()
    for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]:
        h.update(jax.tree_util.keystr(path).encode())
        h.update(np.asarray(x).tobytes())
    return h.hexdigest()


def test_start_points_are_those_of_the_key_name_guessing_they_replaced():
    # Digests of meta/start.py's output before `start_meta` existed (it recognised {"w1", "w2"} and dense_i).
    lpo = Objective(drift=DRIFTS.make("lpo", hidden=8))
    every = Objective(drift=DRIFTS.make("talpo", hidden=4), value_loss=VALUE_LOSSES.make("learned", hidden=(3,) * 11),
                      optimizer=OPTIMIZERS.make("learned", hidden=(5,)))
    key = jax.random.PRNGKey(7)
    assert _digest(start_point(lpo, "hidden", key, 0.5)) == \
        "02dfd2e80cb2d1e931364b89fd28e42fa9fdbea825a83826533add4b52ee7b68"
    assert _digest(start_point(every, "hidden", key, 0.5)) == \
        "9a9c74011033e01a5d46fae218cda870ca7f057a8b124aba1f216944c60dbdab"
    # the output layers stay at zero: the start point is the baseline itself
    start = start_point(every, "hidden", key, 0.5)
    assert not np.any(start["drift"]["w2"]) and not np.any(start["value_loss"]["dense_11"]["kernel"])
    assert np.any(start["drift"]["w1"]) and np.any(start["optimizer"]["dense_0"]["kernel"])


def test_a_piece_without_a_network_starts_at_its_zero_meta():
    piece = DRIFTS.make("ppo")
    assert piece.start_meta(jax.random.PRNGKey(0), 1.0) == {} == piece.zero_meta()


# ---------------------------------------------------------------------------------------------------------
# typed configs keep their resolved form (the digest --resume checks)


@pytest.mark.parametrize("name", ["quickstart", "discover_quick"])
def test_the_committed_output_is_of_the_current_config(name):
    """The committed run is of the recipe as it is now, as `--resume` compares them (the stored config.yaml read
    and written again: it may be of an older schema)."""
    from metadisco.meta.load import as_written_now

    saved = yaml.safe_load((ROOT / "results" / name / "config.yaml").read_text())
    assert as_written_now(saved) == load_config(ROOT / "experiments" / f"{name}.yaml").to_dict()


def test_resolved_configs_and_their_digests_are_unchanged():
    # tests/data/config_digest_v1.yaml is an early quickstart, frozen. Its digests were recorded when config.yaml
    # gained its schema version and every section (a run directory of the earlier digests still resumes:
    # tests/meta/test_config_schema.py); a change of the resolved form changes them.
    v1 = Path(__file__).resolve().parents[1] / "data" / "config_digest_v1.yaml"
    assert config_digest(load_config(v1).to_yaml()) \
        == "a0c07d5ae20dbea9639598e27a9d96dde1e3de0dc78b0e8f12cbc4bbfb82d642"
    # sections written with other spellings (1e-3 is a string to YAML 1.1, options in another order, a default
    # written out) resolve alike
    data = yaml.safe_load(v1.read_text())
    data["tasks"][0]["train"] = yaml.safe_load("{lr: 1e-3, hidden_sizes: [32, 32], num_envs: 8, anneal_lr: false}")
    data["objective"] = yaml.safe_load("{drift: {hidden: 16, kind: talpo, eps: 0.2}, value_loss: {kind: clipped_l2}}")
    config = parse_config(data)
    assert config_digest(config.to_yaml()) == "af7c68803d857a605e226f2a7c967cf93a302303ba064afdc94b772d8c5ad6c8"
    assert config.tasks[0].train["lr"] == 1e-3 and config.tasks[0].train["hidden_sizes"] == (32, 32)
    assert config.objective.drift.hidden == 16 and parse_config(config.to_dict()) == config


def test_value_clip_eps_moved_to_the_clipped_l2_value_loss():
    from metadisco.runs.seeds import resolve_config

    with pytest.raises(UserError, match="value_clip_eps moved .* clipped_l2, clip_eps"):
        resolve_config("CartPole-v1", None, ["value_clip_eps=0.3"])
    data = yaml.safe_load((ROOT / "experiments" / "discover_quick.yaml").read_text())
    data["tasks"][0]["train"] = {"value_clip_eps": 0.3}
    with pytest.raises(UserError, match="value_clip_eps moved"):
        parse_config(data)
    data["tasks"][0]["train"] = {}
    data["objective"]["value_loss"] = {"kind": "clipped_l2", "clip_eps": 0.3}
    assert parse_config(data).objective.value_loss.clip_eps == 0.3
