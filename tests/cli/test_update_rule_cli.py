"""The update-rule slot from the command line (issue 66, item 1): `metadisco import --format disco103` makes an
objective file holding the rule's arrays unchanged; `train` and `evaluate --tune` run it, beside PPO and DPO in
one evaluation (each method with its own algorithm's settings); bad files and settings are refused in one line.

A file with the released names and shapes but random numbers stands in for disco_103.npz, which CI may not have:
the import is about the file's structure (the released file's own check is in tests/objectives/test_disco103.py)."""

import json

import numpy as np
import pytest

from metadisco.cli import main
from metadisco.objectives import load_objective
from metadisco.objectives.disco.weights import SHAPES

TINY = [x for kv in ("hidden_sizes=16", "replay_capacity=8", "replay_batch=4", "num_steps=8") for x in ("--set", kv)]
MIXED = TINY + ["--set", "num_minibatches=2"]  # PPO's, which the update rule's settings leave out


def write_npz(path, seed=0, change=None):
    rng = np.random.default_rng(seed)
    arrays = {f"{m}/{part}": rng.normal(size=shape).astype(np.float32)
              for m, (w, b) in SHAPES.items() for part, shape in (("w", w), ("b", b))}
    if change:
        change(arrays)
    np.savez(path, **arrays)
    return arrays


@pytest.fixture(scope="module")
def rule_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rule")
    arrays = write_npz(folder / "disco_103.npz")
    out = folder / "disco103.msgpack"
    assert main(["import", "--format", "disco103", str(folder / "disco_103.npz"), "--out", str(out)]) == 0
    return out, arrays


@pytest.mark.parametrize("seed", range(3))
def test_the_import_keeps_every_array(tmp_path, capsys, seed):
    arrays = write_npz(tmp_path / "w.npz", seed)
    out = tmp_path / "rule.msgpack"
    assert main(["import", "--format", "disco103", str(tmp_path / "w.npz"), "--out", str(out)]) == 0
    norm = np.sqrt(sum(np.sum(np.square(arrays[k].astype(np.float64))) for k in sorted(arrays)))
    assert "754,778 meta-parameters in 42 arrays" in capsys.readouterr().out
    objective, meta = load_objective(out)
    assert objective.algorithm == "update_rule" and list(objective.pieces()) == ["update_rule"]
    for name, array in arrays.items():
        module, part = name.rsplit("/", 1)
        np.testing.assert_array_equal(np.asarray(meta["update_rule"][module][part]), array)
    flat = {f"{m}/{part}": a for m, parts in meta["update_rule"].items() for part, a in parts.items()}
    assert np.sqrt(sum(np.sum(np.square(np.asarray(flat[k], np.float64))) for k in sorted(flat))) == norm


def test_bad_files_are_refused_in_one_line(tmp_path, capsys):
    def drop(arrays):
        del arrays["lstm/linear/w"]

    def reshape(arrays):
        arrays["lstm/linear/b"] = arrays["lstm/linear/b"][:-1]

    def nan(arrays):
        arrays["lstm/linear/b"][3] = np.nan

    cases = {}
    for name, change, message in (("missing", drop, "missing ['lstm/linear/w']"), ("shape", reshape, "expected"),
                                  ("nan", nan, "non-finite")):
        write_npz(tmp_path / f"{name}.npz", change=change)
        cases[name] = (tmp_path / f"{name}.npz", message)
    np.save(tmp_path / "vector.npy", np.zeros(3, np.float32))
    cases["npy"] = (tmp_path / "vector.npy", "not an .npz (zip) archive")
    cases["absent"] = (tmp_path / "absent.npz", "no file")
    for name, (path, message) in cases.items():
        out = tmp_path / f"{name}.msgpack"
        assert main(["import", "--format", "disco103", str(path), "--out", str(out)]) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, (name, err)
        assert not out.exists()


def test_train_runs_an_update_rule(rule_file, tmp_path):
    out = tmp_path / "train"
    assert main(["--no-progress", "train", "--objective", str(rule_file[0]), "--env", "Catch-bsuite", "--timesteps",
                 "256", "--seeds", "2", *TINY, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["algorithm"] == "update_rule" and summary["losses_finite"] == [True, True]
    assert summary["config"]["replay_batch"] == 4 and summary["timesteps"] == 256
    assert all(-1 <= r <= 1 for r in summary["final_return"])  # Catch pays -1 or +1 an episode


@pytest.mark.heavy
@pytest.mark.slow  # 37 s on 2 cores
def test_evaluate_tunes_an_update_rule_beside_ppo_and_dpo(rule_file, tmp_path):
    out = tmp_path / "eval"
    assert main(["--no-progress", "evaluate", f"rule={rule_file[0]}", "--baselines", "ppo,dpo", "--envs",
                 "Catch-bsuite", "--timesteps", "512", "--seeds", "2", "--tune", "lr=1e-3,1e-2", "--eval-episodes", "2",
                 *MIXED, "--out", str(out)]) == 0
    report = json.loads((out / "eval.json").read_text())
    settings = report["settings"]
    assert settings["configs"]["Catch-bsuite"]["algorithm"] == "update_rule"
    ppo = settings["other_algorithms"]["ppo"]["Catch-bsuite"]
    assert ppo["algorithm"] == "ppo" and "replay_batch" not in ppo and ppo["hidden_sizes"] == [16]
    assert settings["tuning"]["preset"]["Catch-bsuite"] == {"lr": 1e-2}  # update_rule_classic's lr
    assert settings["tuning"]["other_algorithms_preset"]["ppo"]["Catch-bsuite"] == {"lr": 2.5e-4}
    runs = report["envs"]["Catch-bsuite"]
    assert runs["rule"]["curve"]["env_steps"][:2] == [16, 32] and runs["ppo"]["curve"]["env_steps"][:2] == [32, 64]
    for label in ("rule", "ppo", "dpo"):
        assert runs[label]["tuning"]["chosen"]["lr"] in (1e-3, 1e-2) and runs[label]["finite_seeds"] == 2
        assert all(-1 <= r <= 1 for r in runs[label]["eval_return"])  # the agents' modes played whole episodes
    assert set(report["aggregate"]["probability_of_improvement"]) == {"rule > ppo", "rule > dpo"}


@pytest.mark.parametrize("extra,message", [
    (["--preset", "classic"], "leave the preset out"),
    (["--set", "eps_decay=0.2"], "eps_decay is a setting of algorithm pqn"),
])
def test_a_mixed_evaluation_refuses_settings_it_cannot_give(rule_file, tmp_path, capsys, extra, message):
    assert main(["evaluate", str(rule_file[0]), "--baselines", "ppo", "--envs", "Catch-bsuite", "--seeds", "2",
                 *extra, "--out", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_an_update_rule_is_judged_against_the_actor_critic_rule_by_default(rule_file, tmp_path, capsys):
    """The update-rule algorithm's handcrafted control is disco_rl's actor-critic rule: the default baseline."""
    from metadisco.evaluate import default_baselines

    assert default_baselines(str(rule_file[0])) == ["actor_critic"]
    assert default_baselines("dqn") == ["dqn"] and default_baselines("dpo") == ["ppo"]


def test_ppo_settings_are_refused_for_an_update_rule(rule_file, tmp_path, capsys):
    assert main(["train", "--objective", str(rule_file[0]), "--env", "Catch-bsuite", "--set", "ent_coef=0.1",
                 "--out", str(tmp_path / "t")]) == 2
    assert "ent_coef is a setting of algorithm ppo, not of update_rule" in capsys.readouterr().err
    assert main(["train", "--objective", str(rule_file[0]), "--env", "Pendulum-v1", "--out", str(tmp_path / "t")]) == 2
    assert "continuous actions" in capsys.readouterr().err


def test_plot_draws_an_update_rule_on_an_agent_it_trains(rule_file, tmp_path, capsys):
    assert main(["plot", str(rule_file[0]), "--out", str(tmp_path / "p")]) == 2
    assert "give --env ENV" in capsys.readouterr().err


@pytest.mark.heavy
@pytest.mark.slow  # DeepMind's 512-512 agent: 35 s here
def test_plot_with_an_env_writes_the_rule_targets_figure(rule_file, tmp_path):
    assert main(["plot", str(rule_file[0]), "--env", "Catch-bsuite", "--timesteps", "2320", "--out",
                 str(tmp_path / "p")]) == 0
    assert (tmp_path / "p" / "rule_targets.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # 16 s on 2 cores
def test_lpg_meta_trains_by_evolution(tmp_path, capsys):
    """The update-rule slot evolved (issue 66, item 4's machinery): TA-LPG on CartPole, on-policy (the replay is each
    update's rollouts), fitness normalised by PPO's return; two generations of 4 members run and save the rule."""
    config = tmp_path / "lpg.yaml"
    config.write_text(
        "objective:\n  update_rule: {kind: lpg, hidden: 8, lifetime: true}\n"
        "tasks:\n  - env: CartPole-v1\n    timesteps: 2048\n    seeds: 2\n    baseline: 20.0\n"
        "    train: {num_envs: 8, num_steps: 16, replay_capacity: 8, replay_batch: 8, hidden_sizes: [16], lr: 1e-3}\n"
        "strategy: {name: Open_ES, population_size: 4, sigma_init: 0.1}\ngenerations: 2\nheld_out_envs: []\n")
    assert main(["--no-progress", "meta-train", str(config), "--out", str(tmp_path / "run")]) == 0
    assert "no handcrafted method" in capsys.readouterr().err
    objective, meta = load_objective(tmp_path / "run" / "objective.msgpack")
    assert objective.update_rule.name == "lpg" and objective.update_rule.lifetime
    assert float(np.abs(np.asarray(meta["update_rule"]["pi"]["kernel"])).sum()) > 0  # the ES moved the heads
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(np.isfinite(json.loads(line)["fitness_mean"]) for line in lines)


LPG_AGENT = "{num_envs: 8, num_steps: 16, replay_capacity: 8, replay_batch: 8, hidden_sizes: [16], lr: 1.0e-3}"
PAIRED_LPG = (f"objective:\n  update_rule: {{kind: lpg, hidden: 8, lifetime: true}}\n"
              f"tasks:\n  - {{env: CartPole-v1, timesteps: 2048, seeds: 2, train: {LPG_AGENT}}}\n"
              f"normalise: paired\nvalidation:\n  tasks:\n    - {{env: Catch-bsuite, timesteps: 2048, seeds: 1, "
              f"train: {LPG_AGENT}}}\n  every: 1\n"
              f"strategy: {{name: Open_ES, population_size: 4, sigma_init: 0.1}}\ngenerations: 3\neval_every: 3\n"
              f"held_out_envs: []\n")


def test_a_hyper_section_is_refused_beside_an_update_rules_paired_control(tmp_path, capsys):
    config = tmp_path / "lpg.yaml"
    config.write_text(PAIRED_LPG + "hyper:\n  lr: {scale: log}\n")
    assert main(["meta-train", str(config), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "control (actor-critic) trains in a program of its own" in err and len(err.strip().splitlines()) == 1


@pytest.mark.heavy
@pytest.mark.slow  # two runs of 3 generations, each with its actor-critic control: about 2 min on 2 cores
def test_lpg_meta_trains_paired_against_actor_critic_validates_and_resumes_bit_for_bit(tmp_path, monkeypatch, capsys):
    """Paired fitness for a learned update rule: each member against disco_rl's actor-critic rule (the update-rule
    algorithm's control, trained in a program of its own) on the same keys; validated on Catch; a run stopped after
    generation 1 (its next checkpoint's write refused, as a full disk does) and resumed ends with the uninterrupted
    run's metrics (but for timings) and objective, bit for bit."""
    import errno
    import os

    config = tmp_path / "lpg.yaml"
    config.write_text(PAIRED_LPG)
    assert main(["--no-progress", "meta-train", str(config), "--out", str(tmp_path / "whole")]) == 0
    err = capsys.readouterr().err
    assert "actor-critic's reference score on CartPole-v1@2048" in err and "actor-critic-normalised" in err
    real = os.fsync

    def fsync(fd):
        if "gen_000002" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", fsync)
        assert main(["--no-progress", "meta-train", str(config), "--out", str(tmp_path / "cut")]) == 2
    assert main(["--no-progress", "meta-train", str(config), "--out", str(tmp_path / "cut"), "--resume"]) == 0

    def lines(run):
        rows = [json.loads(line) for line in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
        return [{k: v for k, v in row.items() if "seconds" not in k} for row in rows]

    whole = lines("whole")
    assert len(whole) == 3 and whole == lines("cut")
    assert all(np.isfinite(row["fitness_mean"]) for row in whole)
    assert all(row.get("validation") is not None for row in whole), whole[0].keys()
    objective = [(tmp_path / run / "objective.msgpack").read_bytes() for run in ("whole", "cut")]
    assert objective[0] == objective[1]


def test_a_plugins_update_rule_trains_and_its_file_names_the_plugin(tmp_path, capsys):
    """A researcher's own rule (here LPG with the prediction's KL reversed) registers with UPDATE_RULES in a plugin
    module; its objective file names the module, and training it needs that plugin loaded."""
    (tmp_path / "reverse_lpg.py").write_text(
        "from dataclasses import dataclass\nimport jax, jax.numpy as jnp\n"
        "from metadisco.objectives import UPDATE_RULES\nfrom metadisco.objectives.lpg import LPGRule\n\n"
        "@UPDATE_RULES.register('reverse_lpg')\n@dataclass(frozen=True)\nclass ReverseLPG(LPGRule):\n"
        "    def loss(self, inputs, agent_out, targets):\n"
        "        pi_hat, y_hat = jax.lax.stop_gradient(targets)\n"
        "        log_pi = jax.nn.log_softmax(agent_out['logits'][:-1])\n"
        "        log_pi = jnp.take_along_axis(log_pi, inputs.actions[:-1, :, None], -1)[..., 0]\n"
        "        log_y = jax.nn.log_softmax(agent_out['y'][:-1])\n"
        "        return -pi_hat * log_pi + self.alpha_y * jnp.sum(y_hat * (jnp.log(y_hat + 1e-8) - log_y), -1)\n")
    plugin = str(tmp_path / "reverse_lpg.py")
    write = ("from metadisco.objectives import UPDATE_RULES, Objective, save_objective\nimport jax\n"
             "r = UPDATE_RULES.make('reverse_lpg', hidden=8)\n"
             f"save_objective({str(tmp_path / 'rule.msgpack')!r}, Objective(update_rule=r), "
             "{'update_rule': r.start_meta(jax.random.PRNGKey(0), 1.0)})\n")
    (tmp_path / "write.py").write_text(write)
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import reverse_lpg; "
                    f"exec(open({str(tmp_path / 'write.py')!r}).read())"], check=True)
    rule = str(tmp_path / "rule.msgpack")
    assert main(["inspect", rule]) == 2
    assert "--plugin" in capsys.readouterr().err
    settings = [x for kv in ("num_envs=4", "num_steps=8", "replay_capacity=4", "replay_batch=4", "hidden_sizes=8")
                for x in ("--set", kv)]
    assert main(["--no-progress", "--plugin", plugin, "train", "--objective", rule, "--env", "CartPole-v1",
                 "--timesteps", "320", *settings, "--out", str(tmp_path / "t")]) == 0
    summary = json.loads((tmp_path / "t" / "summary.json").read_text())
    assert summary["objective_spec"]["update_rule"] == {"kind": "reverse_lpg", "plugin": "reverse_lpg", "hidden": 8,
                                                         "embedding": 16, "target_width": 8, "alpha_y": 0.5,
                                                         "lifetime": False}
    assert summary["losses_finite"] == [True]
