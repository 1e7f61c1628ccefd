"""The one YAML -> dataclass schema engine of every config (meta-training, sweep, pbt, evaluation methods).

A config is plain data (parsed YAML) read into frozen dataclasses whose fields are typed by their annotations
(`metadisco.core.coerce.coerce`) or, for a section with its own reader, by `cls.PARSERS[name](value, path)`.
`with_overrides` applies `--set key=value` at dotted paths (list entries by index) before reading; an unknown,
missing or mistyped key is a `UserError` naming its path and the known keys. `plain_data` writes a config back
as it was written, for the resolved config file (and the digest that `--resume` checks).
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Iterator, Mapping
from dataclasses import fields
from typing import Any

from metadisco.core.coerce import coerce
from metadisco.core.errors import SettingError, UserError, shorten, unknown_name_error
from metadisco.core.safe_yaml import check_plain_data, load_value

_REQUIRED = dataclasses.MISSING


class Settings(Mapping):
    """A frozen, hashable, ordered mapping of typed values (a task's trainer settings, a strategy's own
    settings), with the mapping as it was written kept aside for the resolved config (`written`)."""

    def __init__(self, items: Mapping | typing.Iterable = (), written: Mapping | None = None):
        self._items = tuple(dict(items).items())
        self.written = written

    def __getitem__(self, key: str) -> Any:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other.items())

    def __repr__(self) -> str:
        return f"Settings({dict(self._items)!r})"

    def to_plain(self) -> dict:
        return plain_data(dict(self.written) if self.written is not None else dict(self._items))



def mapping_section(value: Any, path: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UserError(f"config key {path} must be a mapping, got {shorten(value)}")
    return dict(value)


def plain_data(value):
    """A config value as plain YAML data: tuples as lists, dataclass sections as mappings, and any value with a
    `to_plain()` method as what that returns."""
    if hasattr(value, "to_plain"):  # a section that writes itself (Settings, an Objective, a HyperSearch)
        return value.to_plain()
    if dataclasses.is_dataclass(value):
        return {f.name: plain_data(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: plain_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(v) for v in value]
    return value


def split_assignment(item: str) -> tuple[str, str]:
    """Split 'key=value' into its two halves, with a clear error when there is no '='."""
    if "=" not in item:
        raise SettingError(f"malformed override {shorten(item)}; expected key=value", ("override",))
    key, value = item.split("=", 1)
    if not key.strip():
        raise SettingError(f"malformed override {shorten(item)}; the key is empty", ("override",))
    return key.strip(), value.strip()


def _from_dict(cls, data: Any, key: str):
    path = key.removeprefix("config key ")
    prefix = f"{path}." if path else ""
    if not isinstance(data, dict):
        raise UserError(f"config key {path or '(top level)'} must be a mapping, got {shorten(data)}")
    hints = typing.get_type_hints(cls)
    written = getattr(cls, "KEEP_WRITTEN", {})  # {section: field keeping it as written}
    known = {f.name: f for f in fields(cls) if f.init and f.name not in written.values()}
    for name in data:
        if name not in known:
            raise unknown_name_error(f"config key under {path}" if path else "config key", str(name), list(known))
    parsers = getattr(cls, "PARSERS", {})
    values = {}
    for name, f in known.items():
        if name not in data:
            if f.default is _REQUIRED and f.default_factory is _REQUIRED:
                raise UserError(f"config is missing the key {prefix}{name}")
            continue
        if name in parsers:
            values[name] = parsers[name](data[name], f"{prefix}{name}")
        else:
            values[name] = coerce(data[name], hints[name], f"config key {prefix}{name}")
    for section, keep in written.items():
        if section in data:
            values[keep] = data[section]
    return cls(**values)


def _set_path(data: dict, key: str, value: Any) -> None:
    """Set `data[a][b][0]...` for key 'a.b.0...'; intermediate keys must exist except the last."""
    parts = key.split(".")
    key = shorten(key).strip("'")  # for messages
    node = data
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = shorten(".".join(parts[:depth])).strip("'") or "(top level)"
        if isinstance(node, list):
            if not (part.isascii() and part.isdigit()) or len(part) > 9 or int(part) >= len(node):
                raise SettingError(f"override {key}: {where} is a list of {len(node)} entries; "
                                   f"use an index 0..{len(node) - 1}, got {shorten(part)}", ("override",))
            index = int(part)
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value  # unknown keys are caught when the dataclasses are built
            else:
                if node.get(part) is None:
                    node[part] = {}
                node = node[part]
        else:
            raise SettingError(f"override {key}: {where} is a value, not a mapping or list", ("override",))


def with_overrides(data: Any, overrides, what: str) -> dict:
    """A copy of the plain config data `data` (parsed YAML) with 'key=value' overrides set at their dotted
    paths; `what` names the config kind in the error for data that is not a mapping."""
    check_plain_data(data, "the config")  # before the deep copy: aliases of aliases expand there
    data = copy.deepcopy(data) if data is not None else {}
    if not isinstance(data, dict):
        raise UserError(f"a {what} config must be a YAML mapping at the top level")
    for item in overrides:
        key, text = split_assignment(item)
        value = load_value(text, f"--set {key}") if text else None
        _set_path(data, key, value)
    check_plain_data(data, "the config with its --set values")
    return data


def from_plain(cls, data: dict, key: str = ""):
    """A config dataclass (fields typed by annotations, sections by `cls.PARSERS`) from plain data; an unknown,
    missing or mistyped key is a `UserError` naming its path (`key`: the section's, for a nested one)."""
    return _from_dict(cls, data, key)


class Section:
    """Base of a config dataclass that is a section of another: `coerce` reads a field typed by a dataclass
    through that class's `from_plain(data, key)`, and this gives every section the one reader above."""

    @classmethod
    def from_plain(cls, data: Any, key: str):
        return from_plain(cls, data, key)
