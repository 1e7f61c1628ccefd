"""No code outside the algorithm modules and their registry branches on an algorithm's name: what an algorithm can
do is a field of its `Algorithm` record (`metadisco.trainers.algorithm`)."""

import re
from pathlib import Path

from metadisco.trainers.algorithm import BUILTIN_MODULES, algorithm_names

PACKAGE = Path(__file__).resolve().parents[2] / "metadisco"
OWN = {PACKAGE / (module.removeprefix("metadisco.").replace(".", "/") + ".py") for module in BUILTIN_MODULES}
OWN.add(PACKAGE / "trainers" / "algorithm.py")


def _branches(text: str, names: list[str]) -> list[str]:
    name = "|".join(map(re.escape, names))
    compare = re.compile(rf"""(==|!=|\bis|\bin)\s*[(\[{{]?\s*["']({name})["']|["']({name})["']\s*(==|!=|\bin\b)""")
    return [line.strip() for line in text.splitlines()
            if "algorithm" in line and compare.search(line) and not line.lstrip().startswith("#")]


def test_the_pattern_finds_a_branch():
    assert _branches('    if config.algorithm == "pqn":\n', ["pqn"])
    assert _branches('    if algorithm in ("ppo", "dqn"):\n', ["ppo", "dqn"])
    assert not _branches('    peers = {"ppo": 1}\n    x = peers[config.algorithm]\n', ["ppo"])


def test_no_module_outside_the_algorithms_branches_on_an_algorithm_name():
    names = algorithm_names()
    found = {str(path.relative_to(PACKAGE.parent)): hits for path in sorted(PACKAGE.rglob("*.py"))
             if path not in OWN and (hits := _branches(path.read_text(), names))}
    assert not found, found
