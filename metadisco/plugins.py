"""A researcher's own pieces and envs, without editing the package: plugin modules.

A plugin is a Python module that registers objective pieces and envs with the decorators metadisco's own use
(`DRIFTS.register`, `VALUE_LOSSES.register`, `OPTIMIZERS.register`, `metadisco.envs.register_env`):

    # my_drifts.py
    from dataclasses import dataclass
    from metadisco.objectives import DRIFTS, Piece

    @DRIFTS.register("my_drift")
    @dataclass(frozen=True)
    class MyDrift(Piece):
        def __call__(self, meta, inputs, progress): ...

It is loaded in one of three ways: `plugins: [my_drifts]` in a meta-training config, `--plugin my_drifts`
(repeatable; a module name on the Python path or a `.py` file) on every command, or, for an installed package,
an entry point in the group `metadisco.plugins` (`[project.entry-points."metadisco.plugins"] my = "my_drifts"`),
which is loaded the first time a name is not found and at the start of every command.

Objective files record the module each piece came from (`Piece.plugin`) but never import it: a file from
someone else cannot run code (DESIGN.md). Loading a file whose plugin is not loaded is a one-line `UserError`
naming the module and `--plugin`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from metadisco.errors import UserError
from metadisco.validate import shorten

ENTRY_POINT_GROUP = "metadisco.plugins"
_loaded: list[str] = []  # modules loaded as plugins, in order
_entry_points_loaded = False


def load_plugin(name: str) -> str:
    """Import plugin `name` (a module name, or the path of a `.py` file) once; returns its module name.
    A module that cannot be imported is a one-line `UserError`."""
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"a plugin is a module name or a .py file, got {shorten(name)}")
    name = name.strip()
    path = Path(name)
    if name.endswith(".py"):
        if not path.is_file():
            raise UserError(f"no plugin file {name!r}")
        module_name = path.stem
        if module_name not in sys.modules:
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except UserError:
                raise
            except Exception as e:
                del sys.modules[module_name]
                raise UserError(f"plugin {name!r} failed to load: {type(e).__name__}: {e}") from None
    else:
        module_name = name
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and not (name == e.name or name.startswith(f"{e.name}.")):  # a dependency is missing
                raise UserError(f"plugin {name!r} failed to load: {e}") from None
            raise UserError(f"cannot import plugin module {name!r}: no such module on the Python path "
                            f"(sys.path; give a .py file to --plugin, or install it)") from None
        except UserError:
            raise
        except Exception as e:
            raise UserError(f"plugin {name!r} failed to load: {type(e).__name__}: {e}") from None
    if module_name not in _loaded:
        _loaded.append(module_name)
    return module_name


def load_plugins(names) -> list[str]:
    """Load each of `names` (see `load_plugin`); returns their module names."""
    return [load_plugin(name) for name in names or ()]


def load_entry_points() -> None:
    """Load every installed package's `metadisco.plugins` entry point (once per process)."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as e:
            raise UserError(f"installed plugin {ep.name!r} ({ep.value}, entry point group {ENTRY_POINT_GROUP}) "
                            f"failed to load: {type(e).__name__}: {e}") from None
        module = ep.value.split(":")[0].strip()
        if module not in _loaded:
            _loaded.append(module)


def loaded_plugins() -> tuple[str, ...]:
    """The plugin modules loaded in this process, in order."""
    return tuple(_loaded)


def not_loaded_error(what: str, module: str) -> UserError:
    """The one-line error for a name that plugin `module` defines while it is not loaded."""
    return UserError(f"{what} comes from the plugin module {module!r}, which is not loaded; load it with "
                     f"--plugin {module} (or `plugins: [{module}]` in a meta-training config)")
