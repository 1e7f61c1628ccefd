"""The recipes and the catalogue that ship in the package (`metadisco.core.shipped`): found by name, each
catalogue file listed once and loading, the wheel's package list complete. `.ci/run` installs the built wheel
into a fresh environment and runs a recipe and a catalogue objective by name from an empty folder."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from metadisco.cli import main
from metadisco.core import shipped
from metadisco.core.errors import UserError
from metadisco.meta.load import load_config
from metadisco.objectives.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_lists_every_package_and_maps_the_two_folders():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {str(p.parent.relative_to(ROOT)).replace("/", ".") for p in (ROOT / "metadisco").rglob("__init__.py")}
    assert set(setuptools["packages"]) == on_disk | {"metadisco.recipes", "metadisco.catalogue"}
    assert setuptools["package-dir"] == {"metadisco.recipes": "experiments",
                                         "metadisco.catalogue": "results/objectives"}


def test_a_recipe_by_name_is_its_file_and_a_path_still_works():
    assert shipped.config_path("quickstart") == ROOT / "experiments" / "quickstart.yaml"
    assert load_config("quickstart") == load_config(ROOT / "experiments" / "quickstart.yaml")
    assert set(shipped.recipes()) == {p.stem for p in (ROOT / "experiments").glob("*.yaml")}
    assert all(shipped.recipe_summary(p) for p in shipped.recipes().values())  # every recipe says what it is
    with pytest.raises(UserError, match="unknown config file or recipe 'quickstrat'.*quickstart"):
        load_config("quickstrat")
    with pytest.raises(UserError, match="no config file"):
        load_config("missing.yaml")


def test_every_catalogue_objective_is_listed_once_and_loads_by_name():
    entries = shipped.catalogue()
    assert set(entries) == {p.stem for p in (ROOT / "results" / "objectives").glob("*.msgpack")}
    for name, entry in entries.items():
        assert entry["what"] and entry["tuned"] and entry["meta_training_lr"] in ("fixed", "drawn", "tuned")
        resolved = resolve(f"catalogue:{name}")
        assert resolved.label == name and resolved.file == entry["file"]
    with pytest.raises(UserError, match="unknown catalogue objective 'nope'.*short_long_minatar_talpo"):
        resolve("catalogue:nope")


def test_the_catalogue_command_lists_both(capsys):
    assert main(["catalogue"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in [*shipped.recipes(), *shipped.catalogue()])


def test_experiments_holds_the_recipes_and_nothing_else():
    """One-off experiment scripts live in the results folder whose result they make; experiments/ ships whole as
    `metadisco.recipes`."""
    folder = Path(__file__).resolve().parents[1] / "experiments"
    assert sorted({p.suffix for p in folder.iterdir() if p.is_file()}) == [".yaml"]
