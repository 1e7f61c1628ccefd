"""Safe YAML: `yaml.safe_load` (no Python objects) with bounds on what a small file can expand to.

`safe_load` builds an alias (`*a`) as a reference to the anchored object, so nine aliases of nine aliases
(a "billion laughs" of a few hundred bytes) load quickly into shared lists, but anything that walks, copies
to plain data, prints or hashes them then sees 9**9 values and hangs. A recursive alias (`&a [*a]`) loads as a
cycle. So a loaded document is measured as if expanded, before anything copies it: more than `MAX_VALUES`
values, nesting deeper than `MAX_DEPTH`, more than `MAX_ALIASES` alias uses or a cycle is a one-line
`UserError`. A real config has a few hundred values and no aliases.
"""

from __future__ import annotations

from typing import Any

import yaml

from metadisco.core.errors import UserError

MAX_BYTES = 2**20  # a config is a few KB; PyYAML's pure-Python scanner takes seconds per few MB
MAX_VALUE_CHARS = 2**16  # a --set value longer than this is not parsed as YAML
MAX_ALIASES = 1000
MAX_VALUES = 100_000
MAX_DEPTH = 64


class _CountingLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents with more than `MAX_ALIASES` alias uses while composing."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.alias_uses = getattr(self, "alias_uses", 0) + 1
            if self.alias_uses > MAX_ALIASES:
                raise _Refused(f"more than {MAX_ALIASES} YAML aliases (*name)")
        return super().compose_node(parent, index)


class _Refused(Exception):
    pass


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML `text` (from `source`, for messages) safely; see the module docstring for the bounds."""
    if len(text) > MAX_BYTES:
        raise UserError(f"{source} is {len(text):,} characters long; at most {MAX_BYTES:,} are read as YAML")
    try:
        data = yaml.load(text, Loader=_CountingLoader)  # noqa: S506 (a SafeLoader subclass)
    except _Refused as e:
        raise UserError(f"{source} is refused: {e}; write the values out") from None
    except yaml.YAMLError as e:
        raise UserError(f"damaged {source}: {' '.join(str(e).split())[:200]}") from None
    except RecursionError:
        raise UserError(f"{source} is nested too deeply (at most {MAX_DEPTH} levels)") from None
    except (ValueError, TypeError, OverflowError) as e:  # a constructor refusing a value (huge int, bad date)
        raise UserError(f"damaged {source}: {' '.join(str(e).split())[:200]}") from None
    check_plain_data(data, source)
    return data


def load_value(text: str, source: str) -> Any:
    """A `--set` value: YAML when it parses (`0.05`, `true`, `[a, b]`), else the text itself; bounded alike."""
    if len(text) > MAX_VALUE_CHARS:  # no number or list of names is this long: kept as text, refused by type
        return text
    try:
        return load_yaml(text, source)
    except UserError as e:
        if str(e).startswith("damaged "):
            return text
        raise


def check_plain_data(data: Any, source: str) -> int:
    """The number of values `data` holds when expanded (shared references counted every time they appear);
    a `UserError` if it exceeds `MAX_VALUES`, nests deeper than `MAX_DEPTH` or contains a cycle."""
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Any, depth: int) -> int:
        if not isinstance(node, (dict, list, tuple)):
            return 1
        if depth > MAX_DEPTH:
            raise UserError(f"{source} is nested too deeply (at most {MAX_DEPTH} levels)")
        key = id(node)
        if key in memo:
            return memo[key]
        if key in active:
            raise UserError(f"{source} refers to itself (a recursive YAML alias); write the values out")
        active.add(key)
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_VALUES:
                raise UserError(f"{source} expands to more than {MAX_VALUES:,} values (YAML aliases of aliases?); "
                                "a config holds a few hundred")
        active.discard(key)
        memo[key] = total
        return total

    return size(data, 0)
