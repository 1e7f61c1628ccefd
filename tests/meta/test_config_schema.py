"""A meta-training run's config.yaml carries its schema version (`metadisco.runs.migrate.CONFIG_SCHEMA`) and the
whole resolved config; a run directory written by an older version (no schema, sections left out at their
defaults) still resumes from the config that made it."""

import shutil
from pathlib import Path

import pytest
import yaml

from metadisco.core.errors import UserError
from metadisco.core.io import read_yaml
from metadisco.meta.config import MetaConfig
from metadisco.meta.load import as_written_now, load_config, parse_config
from metadisco.runs.migrate import CONFIG_SCHEMA
from metadisco.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]
# Committed run directories with their checkpoints, and the declared config each was made from (its run.sh).
COMMITTED = [("results/talpo_floor/run", "experiments/talpo_minatar_floor.yaml"),
             ("results/talpo_greedy/run", "experiments/talpo_minatar_greedy.yaml"),
             ("results/talpo_minatar_tuned/run", "experiments/talpo_minatar_tuned.yaml")]


def test_the_resolved_config_leads_with_its_schema_and_holds_every_section():
    config = load_config("quickstart")
    written = yaml.safe_load(config.to_yaml())
    assert next(iter(written)) == "schema" and written["schema"] == CONFIG_SCHEMA
    from dataclasses import fields

    assert set(written) - {"schema"} == {f.name for f in fields(MetaConfig)} - {"objective_written"}
    assert parse_config(written).to_dict() == config.to_dict()  # a run's config.yaml is a config too


@pytest.mark.parametrize("schema, message", [(CONFIG_SCHEMA + 1, "newer than this metadisco reads"),
                                             ("two", "damaged: its schema is 'two'")])
def test_a_config_of_an_unknown_schema_is_one_line(tmp_path, schema, message):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"schema": schema, **load_config("quickstart").to_dict()}))
    with pytest.raises(UserError, match=message) as info:
        load_config(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("run, declared", COMMITTED)
def test_a_committed_run_of_an_older_version_resumes_from_its_declared_config(tmp_path, run, declared):
    stored = read_yaml(ROOT / run / "config.yaml")
    assert "schema" not in stored  # written before config.yaml had a version
    copy = tmp_path / "run"
    copy.mkdir()
    shutil.copy(ROOT / run / "config.yaml", copy / "config.yaml")
    shutil.copytree(ROOT / run / "checkpoints", copy / "checkpoints")
    config = load_config(ROOT / declared)
    assert config.to_yaml() != (ROOT / run / "config.yaml").read_text()  # so the digest differs ...
    ckpt = RunDir(copy, say=lambda message: None).resume_point(True, config.to_yaml(), config.to_dict(),
                                                                upgrade=as_written_now)
    assert ckpt is not None and ckpt.generation == config.generations  # ... and the run resumes
    # another config is still refused
    other = parse_config({**config.to_dict(), "seed": config.seed + 1})
    with pytest.raises(UserError, match="the config differs"):
        RunDir(copy, say=lambda message: None).resume_point(True, other.to_yaml(), other.to_dict(),
                                                            upgrade=as_written_now)


def test_without_a_checkpoint_an_older_config_yaml_of_the_same_run_starts_again(tmp_path):
    run, declared = COMMITTED[0]
    (tmp_path / "config.yaml").write_text((ROOT / run / "config.yaml").read_text())
    config = load_config(ROOT / declared)
    said = []
    assert RunDir(tmp_path, say=said.append).resume_point(True, config.to_yaml(), config.to_dict(),
                                                          upgrade=as_written_now) is None
    assert "starting from generation 0" in said[-1]
