"""The catalogue of discovered objectives (results/objectives/): every kind of file a researcher is told to use
(`KINDS`: files of one kind run the same code) loads with `inspect`, draws with `plot` and trains under `evaluate`,
and every file has its row in the README."""

import json
from pathlib import Path

import msgpack
import pytest

from metadisco.cli import main

CATALOGUE = Path(__file__).resolve().parents[1] / "results" / "objectives"
FILES = sorted(CATALOGUE.glob("*.msgpack"))


def _kind(path: Path) -> tuple:
    """What decides the code `inspect`, `plot` and `evaluate` run for a file: the kind of each of its pieces, not
    their numbers, sizes or options (every piece is called through one interface; one `talpo` drift or
    `expression` drift trains and draws like another)."""
    spec = msgpack.unpackb(path.read_bytes(), strict_map_key=False)["spec"]
    return tuple(sorted((piece, options["kind"]) for piece, options in spec.items()))


KINDS = sorted({_kind(p): p for p in reversed(FILES)}.values())  # the first file of each kind
TINY = ["--seeds", "2", "--timesteps", "1024", "--no-progress", "--set", "num_steps=32", "--set",
        "hidden_sizes=8,8", "--set", "update_epochs=1", "--set", "num_minibatches=1"]


def test_the_catalogue_has_objectives_and_each_has_a_readme_row():
    assert len(FILES) >= 3
    readme = (CATALOGUE / "README.md").read_text()
    for path in FILES:
        assert f"`{path.name}`" in readme, f"{path.name} has no row in results/objectives/README.md"


@pytest.mark.slow  # 19 s on 2 cores
@pytest.mark.parametrize("path", KINDS, ids=[p.stem for p in KINDS])
def test_inspect_and_plot_read_every_kind_of_catalogue_file(path, tmp_path, capsys):
    assert main(["inspect", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["parameters"] >= 0 and set(info["pieces"]) >= {"drift", "value_loss", "optimizer"}
    assert main(["plot", str(path), "--out", str(tmp_path / "fig")]) == 0
    pngs = list((tmp_path / "fig").glob("*.png"))
    assert pngs and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)


@pytest.mark.heavy
@pytest.mark.slow  # 77 s on 2 cores
def test_evaluate_trains_every_kind_of_catalogue_file_beside_ppo_and_dpo(tmp_path):
    first, *others = KINDS
    baselines = ",".join([f"{p.stem}={p}" for p in others] + ["ppo", "dpo"])
    out = tmp_path / "eval"
    assert main(["evaluate", f"{first.stem}={first}", "--baselines", baselines, "--envs", "CartPole-v1",
                 "--out", str(out), *TINY]) == 0
    report = json.loads((out / "eval.json").read_text())
    assert set(report["envs"]["CartPole-v1"]) == {p.stem for p in KINDS} | {"ppo", "dpo"}
    for entry in report["envs"]["CartPole-v1"].values():
        assert entry["finite_seeds"] == 2  # every objective trained without diverging
