"""Sphinx extension: what the registries hold, listed from the code at build time, so the API reference names every
entry with one line and cannot fall behind.

    ```{metadisco-registry} DRIFTS
    ```                                      each registered piece: its name, the first line of its docstring
    ```{metadisco-presets}
    ```                                      each preset: name, algorithm, env family, steps and learning rate
    ```{metadisco-algorithms}
    ```                                      each registered algorithm: name, control, summary
"""

from __future__ import annotations

import inspect

from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


def _first_line(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    # A dataclass without a docstring of its own gets one from its signature: that is no description.
    if not doc or doc.startswith(f"{obj.__name__}("):
        return ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def _rst(directive: SphinxDirective, lines: list[str]):
    from docutils import nodes

    container = nodes.container()
    directive.state.nested_parse(StringList(lines, source="metadisco-registry"), directive.content_offset, container)
    return container.children


class RegistryDirective(SphinxDirective):
    required_arguments = 1  # the registry's name in `metadisco` (DRIFTS, VALUE_LOSSES, OPTIMIZERS, UPDATE_RULES, ...)

    def run(self):
        import metadisco.objectives as objectives

        registry = getattr(objectives, self.arguments[0])
        lines = []
        for name in registry.names():
            cls = registry.get(name)
            options = ", ".join(f for f in getattr(cls, "__dataclass_fields__", {}))
            text = _first_line(cls) or f"`{cls.__module__}.{cls.__qualname__}`"
            lines.append(f"- ``{name}``: {text}" + (f" *Options*: {options}." if options else ""))
        return _rst(self, lines)


class PresetsDirective(SphinxDirective):
    def run(self):
        from metadisco.trainers.algorithm import all_algorithms

        lines = [".. list-table::", "   :header-rows: 1", "", "   * - preset", "     - algorithm",
                 "     - env family", "     - env steps", "     - lr"]
        for algorithm in all_algorithms():
            for family, preset in algorithm.presets.items():
                lines += [f"   * - ``{algorithm.preset_name(family)}``", f"     - {algorithm.name}",
                          f"     - {family}", f"     - {preset.total_timesteps:,}", f"     - {preset.lr:g}"]
        return _rst(self, lines)


class AlgorithmsDirective(SphinxDirective):
    def run(self):
        from metadisco.trainers.algorithm import all_algorithms

        return _rst(self, [f"- ``{a.name}`` (control ``{a.control}``): {a.summary}" for a in all_algorithms()])


def setup(app):
    app.add_directive("metadisco-registry", RegistryDirective)
    app.add_directive("metadisco-presets", PresetsDirective)
    app.add_directive("metadisco-algorithms", AlgorithmsDirective)
    return {"parallel_read_safe": True}
