"""A researcher's own pieces and envs, without editing the package: plugin modules.

A plugin is a Python module that registers objective pieces and envs with the decorators metadisco's own use
(`DRIFTS.register`, `VALUE_LOSSES.register`, `OPTIMIZERS.register`, `TRACES.register`, `UPDATE_RULES.register`,
`metadisco.envs.register_env`):

    # my_drifts.py
    from dataclasses import dataclass
    from metadisco.objectives import DRIFTS, Piece

    @DRIFTS.register("my_drift")
    @dataclass(frozen=True)
    class MyDrift(Piece):
        def __call__(self, meta, inputs, progress): ...

It is loaded in one of three ways: `plugins: [my_drifts]` in a meta-training config, `--plugin my_drifts`
(repeatable; a module name or a `.py` file) on every command, or, for an installed package,
an entry point in the group `metadisco.plugins` (`[project.entry-points."metadisco.plugins"] my = "my_drifts"`),
which is loaded the first time a name is not found and at the start of every command. A module name is found
where `python -m` would find it: on the Python path or in the working directory, and, for a config's
`plugins:`, beside the config too (`load_plugin`).

Objective files record the module each piece came from (`Piece.plugin`) but never import it: a file from
someone else cannot run code (DESIGN.md). Loading a file whose plugin is not loaded is a one-line `UserError`
naming the module and `--plugin`.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

from metadisco.core.errors import UserError, shorten

ENTRY_POINT_GROUP = "metadisco.plugins"
_loaded: list[str] = []  # modules loaded as plugins, in order
_entry_points_loaded = False


def search_dirs(extra=()) -> list[Path]:
    """Where a plugin is looked for after the Python path: the working directory (as `python -m` would put it
    on the path; the `metadisco` script's own path holds only its bin directory), then `extra` (the directory of
    the config that names it), without repeats."""
    dirs: list[Path] = []
    for d in (Path.cwd(), *(Path(x) for x in extra if x is not None)):
        d = d.resolve()
        if d not in dirs:
            dirs.append(d)
    return dirs


def _where(dirs) -> str:
    return "the Python path (sys.path) or in " + ", ".join(str(d) for d in dirs)


def _plugin_file(name: str, dirs: list[Path]) -> Path:
    """The `.py` file `name`: an absolute path as given, a relative one in the first of `dirs` that has it."""
    path = Path(name).expanduser()
    candidates = [path] if path.is_absolute() else [d / path for d in dirs]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise UserError(f"no plugin file {name!r} (looked in {', '.join(str(d) for d in dirs)})")


def _import_file(name: str, path: Path) -> str:
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
    return module_name


def _import(name: str) -> bool:
    """Import module `name`; False if the module itself is not found (a missing dependency is an error)."""
    try:
        importlib.import_module(name)
        return True
    except ModuleNotFoundError as e:
        if e.name and not (name == e.name or name.startswith(f"{e.name}.")):  # a dependency is missing
            raise UserError(f"plugin {name!r} failed to load: {e}") from None
        return False
    except UserError:
        raise
    except Exception as e:
        raise UserError(f"plugin {name!r} failed to load: {type(e).__name__}: {e}") from None


def _import_module(name: str, dirs: list[Path]) -> str:
    """Import module `name` from the Python path, else from the first of `dirs` holding it (that directory is
    then appended to sys.path, so the plugin's own sibling modules import too; appended, it shadows nothing)."""
    if _import(name):
        return name
    top = name.split(".")[0]
    home = next((d for d in dirs if importlib.machinery.PathFinder.find_spec(top, [str(d)])), None)
    if home is not None:
        sys.path.append(str(home))
        importlib.invalidate_caches()
        if _import(name):
            return name
    raise UserError(f"cannot import plugin module {name!r}: no such module on {_where(dirs)}; give the path of "
                    f"its .py file, or install it")


def load_plugin(name: str, search=()) -> str:
    """Import plugin `name` (a module name, or the path of a `.py` file) once; returns its module name.

    A module name is looked for on the Python path, then in the working directory, then in the directories
    `search` (a config's own directory, for the plugins it names); a relative `.py` path likewise in the working
    directory, then `search`. A module that cannot be imported is a one-line `UserError` saying where it looked.
    """
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"a plugin is a module name or a .py file, got {shorten(name)}")
    name = name.strip()
    dirs = search_dirs(search)
    module_name = _import_file(name, _plugin_file(name, dirs)) if name.endswith(".py") else _import_module(name, dirs)
    if module_name not in _loaded:
        _loaded.append(module_name)
    return module_name


def load_plugins(names, search=()) -> list[str]:
    """Load each of `names` (see `load_plugin`); returns their module names."""
    return [load_plugin(name, search) for name in names or ()]


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
                     f"--plugin {module} (found on the Python path or in the working directory; elsewhere give "
                     f"its file: --plugin DIR/{module}.py), or `plugins: [{module}]` in a meta-training config "
                     f"(also found beside the config)")
