"""What ships inside the package: the recipes (meta-training configs, the repository's experiments/) and the
catalogue of discovered objectives (results/objectives/), so that an installed wheel runs its own main job
(`metadisco meta-train quickstart`) and its discoveries (`--objective catalogue:short_long_minatar_talpo`) from any
folder.

pyproject.toml maps the two folders to the packages `metadisco.recipes` and `metadisco.catalogue`; in a checkout
(an editable install or none) they are read where they live, so each file has one place.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from metadisco.core.errors import UserError, unknown_name_error
from metadisco.core.io import read_yaml

CATALOGUE_PREFIX = "catalogue:"
_CHECKOUT = Path(__file__).resolve().parents[2]  # the repository root, when this file is in a checkout
_FOLDERS = {"metadisco.recipes": _CHECKOUT / "experiments", "metadisco.catalogue": _CHECKOUT / "results" / "objectives"}


def _folder(package: str) -> Path:
    """Where `package`'s files are: the installed package data, else the checkout's folder."""
    spec = importlib.util.find_spec(package) if importlib.util.find_spec("metadisco") else None
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            if Path(location).is_dir():
                return Path(location)
    if _FOLDERS[package].is_dir():
        return _FOLDERS[package]
    raise UserError(f"this installation of metadisco has no {package.split('.')[-1]} (neither package data nor a "
                    "checkout's folder); reinstall it")


def recipes() -> dict[str, Path]:
    """Every recipe by name (its file name without .yaml), sorted."""
    return {p.stem: p for p in sorted(_folder("metadisco.recipes").glob("*.yaml"))}


def recipe_summary(path: Path) -> str:
    """A recipe's first comment line: what it is."""
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""


def config_path(name_or_path: str) -> Path:
    """A CONFIG argument: a YAML file's path, or a recipe's name (`quickstart`); a path wins over a name."""
    path = Path(name_or_path)
    if path.exists() or path.suffix or "/" in name_or_path:
        return path  # a missing file is the config reader's one-line error
    known = recipes()
    if name_or_path in known:
        return known[name_or_path]
    raise unknown_name_error("config file or recipe", name_or_path, list(known))


def catalogue() -> dict[str, dict]:
    """The catalogue's index (catalogue.yaml): {name: {what, meta_training_lr, tuned, file}}, each file checked
    to be there."""
    folder = _folder("metadisco.catalogue")
    index = read_yaml(folder / "catalogue.yaml")
    out = {}
    for name, entry in index.items():
        file = folder / f"{name}.msgpack"
        if not file.is_file():
            raise UserError(f"the catalogue lists {name!r} but has no {file.name}; reinstall metadisco")
        out[name] = {**entry, "file": file}
    return out


def catalogue_file(spec: str) -> Path:
    """'catalogue:NAME' -> the objective file of NAME; an unknown name lists the known ones."""
    name = spec[len(CATALOGUE_PREFIX):]
    entries = catalogue()
    if name not in entries:
        raise unknown_name_error("catalogue objective", name, list(entries))
    return entries[name]["file"]
