"""Reading a meta-training config file: YAML and `--set` overrides -> a checked `MetaConfig`
(`metadisco.meta.config` is the schema, `metadisco.meta.checks` the checks, `metadisco.core.schema` the engine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metadisco.core.coerce import coerce
from metadisco.core.errors import UserError
from metadisco.core.io import read_yaml
from metadisco.core.schema import from_plain, with_overrides
from metadisco.core.shipped import config_path
from metadisco.meta.checks import check_meta_config
from metadisco.meta.config import MetaConfig
from metadisco.runs.migrate import read_config_schema


def parse_config(data: Any, overrides: list[str] | tuple[str, ...] = (), base_dir: str | Path | None = None,
                 source: str = "the config") -> MetaConfig:
    """Build a validated `MetaConfig` from plain data (parsed YAML) and 'key=value' overrides. `base_dir`, the
    config file's directory, is where its `plugins:` are looked for after the Python path and the working
    directory. A resolved config of any schema version reads (`metadisco.runs.migrate.read_config_schema`; its
    errors name `source`)."""
    data = with_overrides(read_config_schema(data, source), overrides, "meta-training")
    if "plugins" in data:  # before the objective is read: plugins define its kinds
        from metadisco.core.plugins import load_plugins

        load_plugins(coerce(data["plugins"], tuple[str, ...], "config key plugins"), (base_dir,))
    config = from_plain(MetaConfig, data)
    check_meta_config(config)  # names, types, finiteness, ranges, and sizes against this machine's memory
    return config


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> MetaConfig:
    """Read a YAML config file, or a recipe's by its name; a missing or unparsable file is a `UserError`."""
    path = config_path(str(path))  # a recipe's name (`quickstart`) is its shipped file
    if not path.exists():
        raise UserError(f"no config file {str(path)!r}")
    return parse_config(read_yaml(path), overrides, path.parent, str(path))


def as_written_now(data: Any) -> dict:
    """A run directory's config.yaml of any version (plain data) as this version writes it (`MetaConfig.to_dict`):
    read and written again, which is what a resume compares."""
    return parse_config(data).to_dict()
