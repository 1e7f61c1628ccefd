"""The scripts beside the library (`results/`, `experiments/`, `analysis/`): ruff passes on the whole repository,
and every name a script imports from metadisco exists, checked from its source without running it (a script
trains or reads committed results at its top level)."""

import ast
import importlib
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for folder in ("results", "experiments", "analysis") for p in (ROOT / folder).rglob("*.py"))


def metadisco_imports(path: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None, line) of each `import metadisco...` / `from metadisco... import name`."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name.split(".")[0] == "metadisco"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "metadisco":
            out += [(node.module, a.name, node.lineno) for a in node.names]
    return out


def test_there_are_scripts_to_check():
    assert len(SCRIPTS) > 30 and any("results" in str(p) for p in SCRIPTS)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_a_script_imports_from_metadisco_exists(path):
    for module, name, _line in metadisco_imports(path):
        imported = importlib.import_module(module)
        if name is not None and not hasattr(imported, name):
            importlib.import_module(f"{module}.{name}")  # a submodule; raises if it is not one either


def test_ruff_passes_on_the_repository():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    proc = subprocess.run([ruff, "check", "--quiet", str(ROOT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
