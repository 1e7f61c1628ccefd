"""The leaderboard's entries: every RL algorithm metadisco can run, each as an objective source with the envs it was
meta-trained on and the settings its algorithm trains with (`entries.yaml`, shipped in the package), plus any
objective a user adds (`LABEL=SOURCE`).

An entry's source is what `metadisco evaluate` takes (a built-in name, `catalogue:NAME`, an objective file or a
run directory), or `repo:PATH`, a file of a metadisco checkout (results that are not package data); a source that
is not on this machine makes the entry unavailable, with the command that makes it (`Entry.needs`).
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metadisco.core.errors import UserError, unknown_name_error
from metadisco.core.io import read_yaml

REPO_PREFIX = "repo:"
_CHECKOUT = Path(__file__).resolve().parents[2]
_FIELDS = {"source", "what", "trained_on", "train", "needs"}


@dataclass(frozen=True)
class Entry:
    """One method on the board: `name` in tables; `source` as `evaluate` takes it (or repo:PATH); `what` it is;
    `trained_on`, the envs it was meta-trained or selected on; `train`, settings beyond its algorithm's presets
    (a mapping as `--set` takes them); `needs`, how to make a source that is not shipped."""

    name: str
    source: str
    what: str = ""
    trained_on: tuple[str, ...] = ()
    train: Mapping[str, Any] = field(default_factory=dict)
    needs: str = ""

    def location(self) -> str:
        """The source as `metadisco.objectives.resolve` takes it (repo:PATH -> the checkout's file)."""
        if self.source.startswith(REPO_PREFIX):
            return str(_CHECKOUT / self.source.removeprefix(REPO_PREFIX))
        return self.source

    def missing(self) -> str | None:
        """Why the source cannot be read here, or None when it can."""
        if self.source.startswith(REPO_PREFIX) and not Path(self.location()).exists():
            how = f"; make it with {self.needs}" if self.needs else " (a file of a metadisco checkout)"
            return f"{self.source.removeprefix(REPO_PREFIX)} is not here{how}"
        return None

    def held_out(self, env_id: str) -> bool:
        return env_id not in self.trained_on


def shipped_entries() -> dict[str, Entry]:
    """{name: Entry} of entries.yaml, in its order."""
    data = read_yaml(Path(str(importlib.resources.files("metadisco.leaderboard") / "entries.yaml")))
    return {name: entry_from_dict(name, spec) for name, spec in data.items()}


def entry_from_dict(name: str, spec) -> Entry:
    if not isinstance(spec, dict) or "source" not in spec:
        raise UserError(f"entry {name!r}: give at least source: (a built-in name, catalogue:NAME or repo:PATH)")
    unknown = sorted(set(spec) - _FIELDS)
    if unknown:
        raise UserError(f"entry {name!r}: unknown key {unknown[0]!r}; an entry has {', '.join(sorted(_FIELDS))}")
    trained_on = spec.get("trained_on") or []
    train = spec.get("train") or {}
    if not isinstance(trained_on, list) or not isinstance(train, dict):
        raise UserError(f"entry {name!r}: trained_on is a list of env ids and train a mapping of settings")
    return Entry(name, str(spec["source"]), str(spec.get("what", "")), tuple(map(str, trained_on)),
                 {str(k): tuple(v) if isinstance(v, list) else v for k, v in train.items()}, str(spec.get("needs", "")))


def suite_entries(names, added: list[str] = ()) -> list[Entry]:
    """The entries `names` (a suite's) from entries.yaml, then each of `added` ('LABEL=SOURCE', or a source
    labelled by its file name, as `evaluate` labels methods); an unknown or repeated name is a `UserError`."""
    from metadisco.evaluate.methods import method_from, split_label

    known = shipped_entries()
    out = []
    for name in names:
        if name not in known:
            raise unknown_name_error("leaderboard entry", name, list(known))
        out.append(known[name])
    for text in added:
        label, source = split_label(text)
        label = label or method_from(source).label
        out.append(Entry(label, source, "added by the user"))
    seen: set[str] = set()
    for entry in out:
        if entry.name in seen:
            raise UserError(f"two entries are both called {entry.name!r}; label the added one as LABEL=SOURCE")
        seen.add(entry.name)
    return out
