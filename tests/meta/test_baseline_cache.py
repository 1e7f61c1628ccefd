"""The baseline cache: a second run reads PPO's reference scores and the random policy's returns back, bit for
bit what it would have measured; damaged files are reported and measured again."""

import json
import math
from pathlib import Path

import pytest
import yaml
from tiny_meta import TINY, read_metrics, tiny

from metadisco.cli import main
from metadisco.runs import baseline_cache

TIMINGS = ("seconds", "es_seconds", "scoring_seconds")


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    """An empty cache folder for the commands the test runs, and the library's cache switched back off after."""
    root = tmp_path / "cache"
    monkeypatch.setenv("METADISCO_BASELINE_CACHE_DIR", str(root))
    yield root
    baseline_cache.configure(False)


def _without_timings(out) -> list[dict]:
    return [{k: v for k, v in line.items() if k not in TIMINGS} for line in read_metrics(out)]


def _same_run(a, b) -> None:
    assert _without_timings(a) == _without_timings(b)
    for name in ("objective.msgpack", "objective_best.msgpack", "baselines.json", "summary.json"):
        assert (a / name).exists() == (b / name).exists(), name
        assert not (a / name).exists() or (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.heavy
@pytest.mark.slow  # 98 s on 2 cores
@pytest.mark.parametrize("normalise", ["paired", "fixed"])
def test_a_second_run_reads_the_baselines_back_bit_for_bit(tmp_path, cache_root, capsys, normalise):
    catch = {**TINY["tasks"][0], "env": "Catch-bsuite"}
    # fixed normalisation measures baselines for 2+ tasks; paired ones per task, validates the initial objective,
    # and scores the ES mean after a generation against PPO's control on the fresh seeds ("ppo_control"; trained
    # apart from the mean where that call is the smaller: 8 members on the tests' 4 devices)
    extra = ({"tasks": [TINY["tasks"][0], catch], "generations": 1} if normalise == "fixed" else
             {"validation": {"tasks": [catch]}, "generations": 2, "eval_every": 1, "strategy_population_size": 8})
    config = tiny(normalise=normalise, **extra)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))

    def run(name, *flags):
        before = dict(baseline_cache.counts)
        assert main(["meta-train", str(path), "--out", str(tmp_path / name), *flags]) == 0
        return {k: baseline_cache.counts[k] - before.get(k, 0) for k in ("hit", "miss", "uncached")}, \
            capsys.readouterr().err

    first, err = run("first")
    assert first["miss"] > 0 and first["hit"] == 0 and "from the baseline cache" not in err
    files = sorted(p.name for p in cache_root.iterdir())
    assert len(files) == first["miss"]
    kinds = {"paired": {"random_return", "ppo_reference", "initial_fitness", "initial_validation", "ppo_control"},
             "fixed": {"baseline_return", "initial_fitness"}}[normalise]
    assert {name.split("-")[0] for name in files} == kinds
    second, err = run("second")
    assert second == {"hit": first["miss"], "miss": 0, "uncached": 0}
    assert "from the baseline cache" in err and "measuring" not in err
    _same_run(tmp_path / "first", tmp_path / "second")
    third, err = run("third", "--no-baseline-cache")
    assert third["hit"] == third["miss"] == 0 and third["uncached"] > 0 and "measuring" in err
    _same_run(tmp_path / "first", tmp_path / "third")
    assert sorted(p.name for p in cache_root.iterdir()) == files  # nothing new written


def test_a_damaged_file_is_reported_and_measured_again(tmp_path, capsys):
    baseline_cache.configure(True, tmp_path)
    try:
        calls = []

        def measure():
            calls.append(1)
            return 0.1 + 0.2  # not a short decimal: the stored float must round-trip exactly

        settings = {"env": "CartPole-v1", "seed": 3}
        assert baseline_cache.cached("test", settings, measure) == 0.1 + 0.2
        assert baseline_cache.cached("test", settings, measure) == 0.1 + 0.2 and len(calls) == 1
        name, _ = baseline_cache.key_of("test", settings)
        other, _ = baseline_cache.key_of("test", {**settings, "seed": 4})
        assert other != name  # any setting is part of the key
        for damage in ("{ trunc", json.dumps({"identity": {}, "value": 7.0}), "[]", "\xff"):
            (tmp_path / name).write_text(damage, "latin-1")
            assert baseline_cache.cached("test", settings, measure) == 0.1 + 0.2
            assert "damaged baseline cache file" in capsys.readouterr().err
        assert len(calls) == 5
        assert baseline_cache.cached("test", settings, measure) == 0.1 + 0.2 and len(calls) == 5  # rewritten
        # a NaN (no episode ended) is a figure too
        assert math.isnan(baseline_cache.cached("nan", settings, lambda: float("nan")))
        assert math.isnan(baseline_cache.cached("nan", settings, lambda: pytest.fail("measured again")))
    finally:
        baseline_cache.configure(False)


def test_off_by_default_from_python_and_plugins_are_not_cached(tmp_path):
    assert baseline_cache.folder() is None
    baseline_cache.configure(True, tmp_path)
    try:
        from metadisco.envs.registry import _REGISTERED

        assert baseline_cache.cacheable("CartPole-v1")
        _REGISTERED["MyEnv-v0"] = object
        try:
            assert not baseline_cache.cacheable("MyEnv-v0")
        finally:
            del _REGISTERED["MyEnv-v0"]
        assert baseline_cache.cached("x", {}, lambda: 1.0, use=False) == 1.0
        assert not list(tmp_path.iterdir())
    finally:
        baseline_cache.configure(False)
    assert baseline_cache.code_version().startswith(__import__("metadisco").__version__ + "+")


@pytest.mark.parametrize("command", [["meta-train", "c.yaml", "--out", "x"], ["probe", "c.yaml"],
                                     ["evaluate", "ppo", "--out", "x"]])
def test_meta_train_probe_and_evaluate_take_no_baseline_cache(command):
    from metadisco.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(command).baseline_cache is True
    assert parser.parse_args([*command, "--no-baseline-cache"]).baseline_cache is False


def test_the_code_version_hashes_every_module_that_computes_a_number():
    import metadisco

    package = Path(metadisco.__file__).resolve().parent
    hashed = {str(p.relative_to(package)) for p in baseline_cache.hashed_files()}
    # the scoring, training, env and statistics code (a change to any of them must miss the cache) ...
    assert {"core/stats.py", "meta/problem.py", "meta/paired.py", "trainers/ppo.py", "envs/registry.py",
            "objectives/drift.py", "runs/random_policy.py", "parallel/sharding.py"} <= hashed
    # ... but not the command line, figures, analysis or benchmarks
    assert not any(name.split("/")[0] in ("cli", "figures", "analysis", "bench") for name in hashed)

