"""The command line: one-line errors with exit status 2 for bad input; train writes its summary; devices and the
persistent compilation cache are set up before JAX starts."""

import json
import os
import subprocess
import sys

import pytest

from metadisco.cli import main

TINY_SET = ["--set", "num_steps=16", "--set", "hidden_sizes=8,8", "--set", "update_epochs=1"]


def run_cli(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's own errors
        code = e.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("argv, message", [
    (["train", "--env", "CartPole-v2", "--out", "{out}"], "unknown env 'CartPole-v2'; did you mean 'CartPole-v1'"),
    (["train", "--env", "CartPole-v1", "--objective", "ppx", "--out", "{out}"], "unknown objective 'ppx'"),
    (["train", "--env", "CartPole-v1", "--objective", "missing.msgpack", "--out", "{out}"], "no objective file"),
    (["train", "--env", "CartPole-v1", "--seeds", "0", "--out", "{out}"], "--seeds must be a positive integer"),
    (["train", "--env", "CartPole-v1", "--seeds", "-3", "--out", "{out}"], "--seeds must be a positive integer"),
    (["train", "--env", "CartPole-v1", "--timesteps", "0", "--out", "{out}"], "--timesteps must be a positive"),
    (["train", "--env", "CartPole-v1", "--timesteps", "100", "--out", "{out}"], "smaller than one update"),
    (["train", "--env", "CartPole-v1", "--set", "lrr=1", "--out", "{out}"], "unknown setting 'lrr'"),
    (["train", "--env", "CartPole-v1", "--set", "lr=fast", "--out", "{out}"], "lr must be a finite number, got 'fast'"),
    (["train", "--env", "CartPole-v1", "--set", "lr", "--out", "{out}"], "expected key=value"),
    (["train", "--env", "CartPole-v1", "--preset", "atari", "--out", "{out}"], "unknown preset 'atari'"),
    (["bench", "--seed-counts", "2,4", "--out", "{out}/b.json"], "include 1"),
    (["bench", "--update-rule", "--seed-counts", "2", "--out", "{out}/b.json"], "include 1"),
    (["bench", "--update-rule", "--peers", "--out", "{out}/b.json"], "drop --meta, --peers"),
    (["bench", "--update-rule", "--envs", "Breakout-MinAtar", "--out", "{out}/b.json"], "measures its own cases"),
    (["train", "--env", "CartPole-v1", "--devices", "9", "--out", "{out}"], "--devices 9: this process has only 4"),
    (["--devices", "0", "train", "--env", "CartPole-v1", "--out", "{out}"], "--devices must be a positive integer"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_gives_one_line_and_status_2(capsys, tmp_path, argv, message):
    argv = [a.replace("{out}", str(tmp_path / "out")) for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.slow  # 12 s on 2 cores
def test_train_writes_summary(capsys, tmp_path):
    code, _, err = run_cli(capsys, "train", "--env", "CartPole-v1", "--objective", "dpo", "--seeds", "2",
                           "--timesteps", "256", "--out", str(tmp_path), *TINY_SET)
    assert code == 0, err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["env"] == "CartPole-v1" and summary["objective"] == "dpo" and summary["seeds"] == 2
    assert len(summary["final_return"]) == 2 and summary["steps_per_second"] > 0
    assert summary["timesteps"] == 256 and summary["config"]["num_steps"] == 16
    assert summary["objective_spec"]["drift"] == {"kind": "dpo", "alpha": 2.0, "beta": 0.6}
    assert summary["devices"] == 2  # one per seed: the session (conftest) has 4


@pytest.mark.slow  # 18 s on 2 cores
@pytest.mark.parametrize("where", ["before", "after"])
def test_devices_option_before_or_after_the_command(capsys, tmp_path, where):
    args = ["train", "--env", "CartPole-v1", "--seeds", "3", "--timesteps", "256", "--out", str(tmp_path), *TINY_SET]
    args = ["--devices", "1", *args] if where == "before" else [*args, "--devices", "1"]
    code, _, err = run_cli(capsys, *args)
    assert code == 0, err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["devices"] == 1 and len(summary["final_return"]) == 3
    assert "over 1 device(s)" in err


def test_envs_lists_ids_with_shapes(capsys):
    code, out, _ = run_cli(capsys, "envs", "--no-brax")
    assert code == 0
    assert any(line.split()[:3] == ["CartPole-v1", "(4,)", "Discrete(2)"] for line in out.splitlines())
    assert any(line.startswith("Pendulum-v1") and "Box(-2, 2, (1,))" in line for line in out.splitlines())


def test_console_script_exit_status():
    proc = subprocess.run([sys.executable, "-m", "metadisco", "train", "--env", "Nope-v0", "--out", "/tmp/x"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("metadisco train: error: unknown env 'Nope-v0'")


@pytest.mark.heavy
@pytest.mark.slow  # 57 s on 2 cores
def test_fresh_process_uses_every_core_and_the_compilation_cache(tmp_path):
    """A real start: no XLA_FLAGS, so one device per core; the cache under XDG_CACHE_HOME serves the second run,
    and not a third with --no-compile-cache (the same program otherwise)."""
    from metadisco.parallel.devices import cpu_count

    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS" and not k.startswith("JAX_")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), JAX_PLATFORMS="cpu")

    def train(out, *extra):
        cmd = [sys.executable, "-m", "metadisco", *extra, "train", "--env", "CartPole-v1", "--seeds", "3",
               "--timesteps", "256", "--out", str(tmp_path / out), *TINY_SET]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads((tmp_path / out / "summary.json").read_text())

    first, second = train("a"), train("b")
    assert first["devices"] == second["devices"] == cpu_count()
    assert any((tmp_path / "cache" / "metadisco" / "jax").iterdir())
    assert not first["compile_cached"] and second["compile_cached"]
    assert second["final_return"] == first["final_return"]  # same seed, same device count: bit-identical
    third = train("c", "--devices", str(cpu_count()), "--no-compile-cache")
    assert third["devices"] == cpu_count() and not third["compile_cached"]


def test_version_is_the_packages_one(capsys):
    import importlib.metadata

    import metadisco

    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.strip() == f"metadisco {metadisco.__version__}"
    assert importlib.metadata.version("metadisco") == metadisco.__version__  # pyproject reads it from there
