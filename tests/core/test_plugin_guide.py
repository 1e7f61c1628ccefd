"""The plugin guide's example (docs/guide/plugins.md), run as written from a fresh directory through the real
command: `my_drifts.py` in the working directory, `plugins: [my_drifts]` in a config, `--plugin my_drifts` as
`inspect` advises, and a config that names a plugin kept beside it, run from elsewhere."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tiny_meta import tiny

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "plugins.md"
METADISCO = [sys.executable, "-m", "metadisco"]
# tiny's task with the smallest trainer program (one epoch of one minibatch, one hidden layer): the meta-training run
# only has to write a run directory whose objective names the plugin.
SMALL = {"env": "CartPole-v1", "timesteps": 256, "seeds": 1,
         "train": {"num_envs": 4, "num_steps": 16, "hidden_sizes": [8], "num_minibatches": 1, "update_epochs": 1,
                   "lr": 0.01}}


def guide_plugin() -> str:
    """The guide's `# my_drifts.py` code block, verbatim."""
    match = re.search(r"```python\n(# my_drifts\.py\n.*?)```", GUIDE.read_text(), re.S)
    assert match, "docs/guide/plugins.md has no `# my_drifts.py` example"
    return match.group(1)


def metadisco(cwd, *argv) -> subprocess.CompletedProcess:
    return subprocess.run([*METADISCO, *argv], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.heavy
@pytest.mark.slow  # 36 s on 2 cores
def test_the_guide_plugin_runs_as_written_from_its_directory(tmp_path):
    (tmp_path / "my_drifts.py").write_text(guide_plugin())
    config = tiny(plugins=["my_drifts"], objective={"drift": {"kind": "scaled_ppo"}}, generations=1, tasks=[SMALL])
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(config))
    proc = metadisco(tmp_path, "meta-train", "exp.yaml", "--out", "run")
    assert proc.returncode == 0, proc.stderr

    refused = metadisco(tmp_path, "inspect", "run")  # the plugin is not loaded: one line that says how
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    advised = re.search(r"--plugin (\S+)", refused.stderr).group(1)
    assert advised == "my_drifts"
    shown = metadisco(tmp_path, "inspect", "run", "--plugin", advised)
    assert shown.returncode == 0, shown.stderr
    assert "scaled_ppo" in shown.stdout and "(plugin my_drifts)" in shown.stdout


@pytest.mark.slow  # 11 s on 2 cores
def test_a_config_finds_the_plugin_beside_it_from_another_directory(tmp_path):
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "my_drifts.py").write_text(guide_plugin())
    config = tiny(plugins=["my_drifts"], objective={"drift": {"kind": "scaled_ppo"}})
    (tmp_path / "exp" / "exp.yaml").write_text(yaml.safe_dump(config))
    code = ("from metadisco.meta.load import load_config; "
            "print(load_config('exp/exp.yaml').objective.drift.plugin)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "my_drifts"
    missing = metadisco(tmp_path, "inspect", "ppo", "--plugin", "my_drifts")  # not beside a config, not here
    assert missing.returncode == 2
    assert "cannot import plugin module 'my_drifts'" in missing.stderr and str(tmp_path) in missing.stderr
