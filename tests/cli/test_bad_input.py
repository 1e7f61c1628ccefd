"""The catalogue of hostile input and faults (issue 15): every row runs the real command line and must give
exit status 2, exactly one line on stderr, no traceback, within a time bound, before any training, leaving
every file that was already on disk unchanged and writing nothing.

One block of rows per family of the issue: non-finite numbers, integers without bounds, I/O errors, small
files that hang, and the smaller ones (a checkpoint missing a field, `bench --envs ,`, an objective file
without a checksum, a 5 MB bad value, piece options of the wrong type). Rows that could hang if a fix
regressed run in a subprocess with a timeout; the rest call `metadisco.cli.main` in this process. The torn
metrics log and a resume with fewer generations are successes, not errors: they are tested at the end.

Permission bits cannot make a file unwritable or unreadable for root (these tests run as root in CI), so
"cannot write" uses a path under a regular file (no one can create that) and "cannot read" a directory where
a file is expected; the chmod variants run only for other users.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from flax import serialization
from tiny_meta import TINY  # the tiny meta-training config (its compiled programs are cached)

from metadisco.cli import main
from metadisco.core import checkpoint as ckpt_lib
from metadisco.objectives import DRIFTS, Objective, save_objective
from metadisco.objectives.files import FORMAT, _checksum

REPO = Path(__file__).resolve().parents[2]
IN_PROCESS_SECONDS = 10.0  # a refusal is checks only; generous for a loaded 2-core CI machine
SUBPROCESS_SECONDS = 90.0  # includes starting Python and importing JAX


BOMB = """\
a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
"""

# The same bomb in YAML's flow style, for a --set value.
BOMB_FLOW = "{" + ", ".join(line.split(": ", 1)[0] + ": " + line.split(": ", 1)[1]
                            for line in BOMB.strip().splitlines()) + "}"


def _signed(spec: dict, meta: dict) -> bytes:
    """An objective file's bytes with a valid checksum (so loading reaches the checks behind it)."""
    return serialization.msgpack_serialize({"format": FORMAT, "version": 1, "spec": spec, "meta": meta,
                                            "sha256": _checksum(spec, meta)})


def _empty_meta() -> dict:
    return {"drift": {}, "value_loss": {}, "optimizer": {}}


def _write_config(path: Path, config: dict | str) -> Path:
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """Every input file the rows need, made once; the rows must leave all of it unchanged."""
    w = tmp_path_factory.mktemp("world")
    _write_config(w / "tiny.yaml", TINY)
    lpo = Objective(drift=DRIFTS.make("lpo", hidden=4))
    save_objective(w / "lpo.msgpack", lpo, lpo.zero_meta())
    w1 = np.zeros((8, 4), np.float32)
    w1[0, 0] = np.nan
    lpo_meta = {"drift": {"w1": w1, "w2": np.full((4, 1), np.inf, np.float32)}, "value_loss": {}, "optimizer": {}}
    (w / "nan.msgpack").write_bytes(_signed({"drift": {"kind": "lpo", "hidden": 4, "eps": 0.2}}, lpo_meta))
    (w / "huge_hidden.msgpack").write_bytes(_signed({"drift": {"kind": "lpo", "hidden": 2_000_000_000}},
                                                    _empty_meta()))
    (w / "eps_abc.msgpack").write_bytes(_signed({"drift": {"kind": "ppo", "eps": "abc"}}, _empty_meta()))
    (w / "eps_nan.msgpack").write_bytes(_signed({"drift": {"kind": "ppo", "eps": float("nan")}}, _empty_meta()))
    unsigned = {"format": FORMAT, "version": 1, "spec": {"drift": {"kind": "ppo"}}, "meta": _empty_meta()}
    (w / "no_checksum.msgpack").write_bytes(serialization.msgpack_serialize(unsigned))
    power = {"drift": {"kind": "expression", "expression": "(r-1)**2*(r+2)**1000000000", "constants": []}}
    (w / "power.msgpack").write_bytes(_signed(power, _empty_meta()))
    nested = {"drift": {"kind": "expression", "expression": "(r-1)**2*" + "exp(" * 150 + "A" + ")" * 150,
                        "constants": []}}
    (w / "deep.msgpack").write_bytes(_signed(nested, _empty_meta()))
    # YAML alias bombs: in an objective option, in a task's train section; a recursive alias.
    _write_config(w / "bomb_objective.yaml", BOMB + "objective: {drift: {kind: expression, constants: *h}}\n"
                  + yaml.safe_dump({k: v for k, v in TINY.items() if k != "objective"}))
    tiny_no_train = {**TINY, "tasks": [{k: v for k, v in TINY["tasks"][0].items() if k != "train"}]}
    bomb_train = yaml.safe_dump(tiny_no_train).replace("  timesteps: 256", "  timesteps: 256\n  train: *h")
    _write_config(w / "bomb_train.yaml", BOMB + bomb_train)
    _write_config(w / "recursive.yaml", "a: &a [*a]\n" + yaml.safe_dump(TINY))
    _write_config(w / "nan_in_yaml.yaml", yaml.safe_dump(TINY).replace("update_epochs: 2", "update_epochs: 2\n"
                                                                         "    lr: .nan"))
    (w / "config_dir.yaml").mkdir()
    (w / "a_file").write_text("not a directory\n")
    (w / "dangling").symlink_to(w / "nowhere" / "at_all")
    # Run directories to resume: a checkpoint that is a directory (cannot be read), and one with a valid
    # checksum but a missing field. Their config.yaml matches tiny.yaml.
    for name in ("run_unreadable", "run_missing_field"):
        run = w / name
        (run / "checkpoints").mkdir(parents=True)
        (run / "config.yaml").write_text("placeholder: true\n")
        (run / "metrics.jsonl").write_text('{"generation": 0}\n')
    (w / "run_unreadable" / "checkpoints" / "gen_000001.msgpack").mkdir()
    (w / "run_metrics_dir" / "checkpoints").mkdir(parents=True)
    (w / "run_metrics_dir" / "metrics.jsonl").mkdir()
    _write_config(w / "huge.yaml", "generations: " + "9" * 2_000_000 + "\n")
    (w / "binary.yaml").write_bytes(b"generations: \xff\xfe\x00\x01\n")
    body = ckpt_lib._body(ckpt_lib.Checkpoint(1, np.zeros(2, np.uint32), [np.zeros(3, np.float32)], {}, 1, 10, "x"))
    del body["env_steps"]
    data = serialization.msgpack_serialize({**body, "sha256": ckpt_lib._digest(body)})
    (w / "run_missing_field" / "checkpoints" / "gen_000001.msgpack").write_bytes(data)
    return w


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root`: kind, bytes' digest and modification time, so any change shows."""
    out = {}
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        if path.is_symlink():
            out[str(path)] = ("link", os.readlink(path))
        elif path.is_dir():
            out[str(path)] = ("dir",)
        else:
            out[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_mtime_ns)
    return out


FIVE_MB = "9" * 5_000_000
T = ["--timesteps", "256", "--set", "num_steps=16", "--set", "hidden_sizes=8,8"]  # tiny training, if it ran
E = ["--envs", "CartPole-v1", "--seeds", "1"]

# (id, argv with {w} = the world directory and {out} = a fresh path, substring of the one error line)
ROWS = [
    # non-finite numbers
    ("lr-nan", ["train", "--env", "CartPole-v1", "--set", "lr=nan", *T, "--out", "{out}"], "lr must be a finite"),
    ("lr-inf", ["train", "--env", "CartPole-v1", "--set", "lr=inf", *T, "--out", "{out}"], "lr must be a finite"),
    ("gamma-nan", ["train", "--env", "CartPole-v1", "--set", "gamma=nan", "--out", "{out}"], "gamma must be"),
    ("ent-coef-neg-inf", ["train", "--env", "CartPole-v1", "--set", "ent_coef=-inf", "--out", "{out}"],
     "ent_coef must be"),
    ("evaluate-lr-nan", ["evaluate", "dpo", *E, "--set", "lr=nan", "--out", "{out}"], "lr must be a finite"),
    ("sigma-nan", ["meta-train", "{w}/tiny.yaml", "--set", "strategy.sigma_init=.nan", "--out", "{out}"],
     "strategy.sigma_init must be a finite number"),
    ("sigma-negative", ["meta-train", "{w}/tiny.yaml", "--set", "strategy.sigma_init=-1", "--out", "{out}"],
     "strategy.sigma_init must be a finite number in (0, inf)"),
    ("es-lr-inf", ["meta-train", "{w}/tiny.yaml", "--set", "strategy.lr=.inf", "--out", "{out}"],
     "strategy.lr must be a finite"),
    ("baseline-nan", ["meta-train", "{w}/tiny.yaml", "--set", "tasks.0.baseline=.nan", "--out", "{out}"],
     "tasks.0.baseline must be a finite"),
    ("baseline-zero", ["meta-train", "{w}/tiny.yaml", "--set", "tasks.0.baseline=0", "--out", "{out}"],
     "must not be 0"),
    ("generations-inf", ["meta-train", "{w}/tiny.yaml", "--set", "generations=.inf", "--out", "{out}"],
     "generations must be an integer"),
    ("generations-nan", ["meta-train", "{w}/tiny.yaml", "--set", "generations=.nan", "--out", "{out}"],
     "generations must be an integer"),
    ("start-scale-nan", ["meta-train", "{w}/tiny.yaml", "--set", "start_scale=.nan", "--out", "{out}"],
     "start_scale must be a finite"),
    ("combine-typo", ["meta-train", "{w}/tiny.yaml", "--set", "combine=ranks", "--out", "{out}"],
     "unknown combine 'ranks'; did you mean 'rank'?"),
    ("strategy-setting-nan", ["meta-train", "{w}/tiny.yaml", "--set", "strategy.settings.std_min=.nan",
                              "--out", "{out}"], "strategy.settings.std_min must be a finite"),
    ("task-lr-nan-in-yaml", ["meta-train", "{w}/nan_in_yaml.yaml", "--out", "{out}"], "lr must be a finite"),
    ("train-nan-meta", ["train", "--env", "CartPole-v1", "--objective", "{w}/nan.msgpack", "--out", "{out}"],
     "non-finite"),
    ("plot-nan-meta", ["plot", "{w}/nan.msgpack", "--out", "{out}"], "non-finite"),
    ("distil-nan-meta", ["distil", "{w}/nan.msgpack", "--out", "{out}"], "non-finite"),
    ("inspect-nan-meta", ["inspect", "{w}/nan.msgpack", "--json"], "non-finite"),
    ("evaluate-nan-meta", ["evaluate", "{w}/nan.msgpack", *E, "--out", "{out}"], "non-finite"),
    ("piece-option-nan", ["inspect", "{w}/eps_nan.msgpack"], "option eps must be a finite"),
    ("distil-progress-nan", ["distil", "dpo", "--at-progress", "nan", "--out", "{out}"], "--at-progress must be"),
    # integers without bounds, sizes beyond memory
    ("train-seed-huge", ["train", "--env", "CartPole-v1", "--seed", "99999999999999999999999", "--out", "{out}"],
     "--seed must be an integer in [0, 4,294,967,295]"),
    ("train-seed-negative", ["train", "--env", "CartPole-v1", "--seed", "-1", "--out", "{out}"], "--seed must be"),
    ("evaluate-seed-huge", ["evaluate", "dpo", *E, "--seed", "99999999999999999999999", "--out", "{out}"],
     "--seed must be"),
    ("yaml-seed-huge", ["meta-train", "{w}/tiny.yaml", "--set", "seed=99999999999999999999999", "--out", "{out}"],
     "seed must be an integer in [0, 4,294,967,295]"),
    ("timesteps-1e30", ["train", "--env", "CartPole-v1", "--timesteps", "1e30", "--out", "{out}"],
     "--timesteps must be a positive integer up to"),
    ("timesteps-too-many-updates", ["train", "--env", "CartPole-v1", "--timesteps", "9e15", "--out", "{out}"],
     "at most 2,147,483,647 (the update loop counts in int32)"),
    ("yaml-timesteps-1e30", ["meta-train", "{w}/tiny.yaml", "--set", "tasks.0.timesteps=1.0e+30", "--out", "{out}"],
     "updates"),
    ("train-seeds-1e9", ["train", "--env", "CartPole-v1", "--seeds", "1e9", "--out", "{out}"],
     "needs at least"),
    ("evaluate-seeds-1e9", ["evaluate", "dpo", "--envs", "CartPole-v1", "--seeds", "1e9", "--out", "{out}"],
     "needs at least"),
    ("population-huge", ["meta-train", "{w}/tiny.yaml", "--set", "strategy.population_size=1000000000000",
                         "--out", "{out}"], "strategy.population_size must be an integer in"),
    ("population-beyond-memory", ["meta-train", "{w}/tiny.yaml", "--set", "strategy.population_size=2000000000",
                                  "--out", "{out}"], "needs at least"),
    ("task-seeds-beyond-memory", ["meta-train", "{w}/tiny.yaml", "--set", "tasks.0.seeds=1000000000",
                                  "--out", "{out}"], "needs at least"),
    ("num-envs-huge", ["train", "--env", "CartPole-v1", "--set", "num_envs=1e12", "--out", "{out}"],
     "num_envs must be an integer in"),
    ("hidden-sizes-beyond-memory", ["train", "--env", "CartPole-v1", "--set", "hidden_sizes=2000000000",
                                    "--out", "{out}"], "needs at least"),
    ("file-hidden-2e9", ["train", "--env", "CartPole-v1", "--objective", "{w}/huge_hidden.msgpack",
                         "--out", "{out}"], "meta-parameters"),
    ("yaml-hidden-2e9", ["meta-train", "{w}/tiny.yaml", "--set", "objective.drift.hidden=2000000000",
                         "--out", "{out}"], "at most 16,777,216"),
    ("yaml-hidden-beyond-int", ["meta-train", "{w}/tiny.yaml", "--set", "objective.drift.hidden=1e40",
                                "--out", "{out}"], "option hidden must be an integer"),
    ("set-index-huge", ["meta-train", "{w}/tiny.yaml", "--set", "tasks.99999999999999999999.seeds=1",
                        "--out", "{out}"], "tasks is a list of 1 entries"),
    ("generations-huge", ["meta-train", "{w}/tiny.yaml", "--set", "generations=1000000000000", "--out", "{out}"],
     "generations must be an integer in"),
    ("distil-points-huge", ["distil", "dpo", "--points", "1e9", "--out", "{out}"], "--points must be"),
    ("bench-seeds-huge", ["bench", "--envs", "CartPole-v1", "--seed-counts", "1,1000000000", "--out", "{out}/b.json"],
     "needs at least"),
    # I/O: unwritable, dangling, unreadable; found before any work
    ("evaluate-out-unwritable", ["evaluate", "dpo", *E, "--out", "{w}/a_file/sub"], "cannot create the --out"),
    ("train-out-unwritable", ["train", "--env", "CartPole-v1", *T, "--out", "{w}/a_file/sub"], "cannot create"),
    ("meta-train-out-unwritable", ["meta-train", "{w}/tiny.yaml", "--out", "{w}/a_file/sub"], "cannot create"),
    ("plot-out-unwritable", ["plot", "dpo", "--out", "{w}/a_file/sub"], "cannot create"),
    ("distil-out-unwritable", ["distil", "dpo", "--out", "{w}/a_file/sub"], "cannot create"),
    ("bench-out-unwritable", ["bench", "--envs", "CartPole-v1", "--out", "{w}/a_file/sub/b.json"], "cannot create"),
    ("bench-out-directory", ["bench", "--envs", "CartPole-v1", "--out", "{w}"], "is a directory"),
    ("train-out-is-a-file", ["train", "--env", "CartPole-v1", *T, "--out", "{w}/a_file"], "is a file"),
    ("train-out-dangling", ["train", "--env", "CartPole-v1", *T, "--out", "{w}/dangling"], "dangling symbolic link"),
    ("evaluate-out-dangling", ["evaluate", "dpo", *E, "--out", "{w}/dangling"], "dangling symbolic link"),
    ("meta-train-out-dangling", ["meta-train", "{w}/tiny.yaml", "--out", "{w}/dangling"], "dangling"),
    ("config-is-a-directory", ["meta-train", "{w}/config_dir.yaml", "--out", "{out}"], "cannot read YAML file"),
    ("config-missing", ["meta-train", "{w}/none.yaml", "--out", "{out}"], "no config file"),
    ("config-too-big", ["meta-train", "{w}/huge.yaml", "--out", "{out}"], "at most 1,048,576 are read as YAML"),
    ("config-not-text", ["meta-train", "{w}/binary.yaml", "--out", "{out}"], "not UTF-8 text"),
    ("out-not-empty-without-resume", ["meta-train", "{w}/tiny.yaml", "--out", "{w}/run_missing_field"],
     "is not empty; pass --resume"),
    ("metrics-unreadable-on-resume", ["meta-train", "{w}/tiny.yaml", "--resume", "--out", "{w}/run_metrics_dir"],
     "cannot read metrics file"),
    ("checkpoint-unreadable", ["meta-train", "{w}/tiny.yaml", "--resume", "--out", "{w}/run_unreadable"],
     "cannot read checkpoint"),
    ("objective-is-a-directory", ["inspect", "{w}/config_dir.yaml/"], "has no objective.msgpack"),
    # small files that would hang (also run in a subprocess below)
    ("alias-bomb-objective", ["meta-train", "{w}/bomb_objective.yaml", "--out", "{out}"], "expands to more than"),
    ("alias-bomb-train", ["meta-train", "{w}/bomb_train.yaml", "--out", "{out}"], "expands to more than"),
    ("recursive-alias", ["meta-train", "{w}/recursive.yaml", "--out", "{out}"], "refers to itself"),
    ("alias-bomb-set", ["meta-train", "{w}/tiny.yaml", "--set", "tasks.0.train=" + BOMB_FLOW, "--out", "{out}"],
     "--set tasks.0.train expands to more than"),
    ("expression-huge-power", ["inspect", "{w}/power.msgpack"], "exponent 1000000000 is beyond +-64"),
    ("expression-deep", ["inspect", "{w}/deep.msgpack"], "nested deeper than"),
    ("expression-power-yaml", ["meta-train", "{w}/tiny.yaml", "--set",
                               "objective.drift={kind: expression, expression: '(r-1)**2*9**9**9'}",
                               "--out", "{out}"], "beyond +-64"),
    # smaller ones
    ("checkpoint-missing-field", ["meta-train", "{w}/tiny.yaml", "--resume", "--out", "{w}/run_missing_field"],
     "field 'env_steps' is missing"),
    ("bench-envs-comma", ["bench", "--envs", ",", "--out", "{out}/b.json"], "--envs names no env id"),
    ("bench-peer-figures-typo", ["bench", "--peers", "--peer-figures", "pqm", "--out", "{out}/b.json"],
     "--peer-figures must be a comma-separated subset of ppo, pqn, minatar"),
    ("bench-only-peers-alone", ["bench", "--only-peers", "--out", "{out}/b.json"], "add --peers"),
    ("bench-recipes-alone", ["bench", "--recipes", "{w}/tiny.yaml", "--out", "{out}/b.json"], "add --meta"),
    ("bench-recipes-missing", ["bench", "--meta", "--recipes", "{w}/tiny.yaml,{w}/nope.yaml", "--out",
                               "{out}/b.json"], "nope.yaml"),
    ("objective-without-checksum", ["train", "--env", "CartPole-v1", "--objective", "{w}/no_checksum.msgpack",
                                    "--out", "{out}"], "no checksum"),
    ("distil-evaluate-on-typo", ["distil", "dpo", "--evaluate-on", "CartPole-v2", "--out", "{out}"],
     "unknown env 'CartPole-v2'"),
    ("distil-weighted-typo", ["distil", "dpo", "--weighted-by-env", "CartPol", "--out", "{out}"], "unknown env"),
    ("five-mb-value", ["train", "--env", "CartPole-v1", "--set", "lr=" + FIVE_MB, "--out", "{out}"],
     "lr must be a finite number, got '999999999"),
    ("five-mb-key", ["train", "--env", "CartPole-v1", "--set", FIVE_MB + "=1", "--out", "{out}"],
     "unknown setting"),
    ("five-mb-env", ["train", "--env", FIVE_MB, "--out", "{out}"], "unknown env"),
    ("five-mb-yaml-value", ["meta-train", "{w}/tiny.yaml", "--set", "generations=" + FIVE_MB, "--out", "{out}"],
     "generations must be an integer"),
    ("piece-option-abc-file", ["train", "--env", "CartPole-v1", "--objective", "{w}/eps_abc.msgpack",
                               "--out", "{out}"], "option eps must be a finite number, got 'abc'"),
    ("piece-option-abc-yaml", ["meta-train", "{w}/tiny.yaml", "--set", "objective.drift.eps=abc", "--out", "{out}"],
     "option eps must be a finite number, got 'abc'"),
    ("piece-option-bool-for-int", ["meta-train", "{w}/tiny.yaml", "--set", "objective.drift.hidden=true",
                                   "--out", "{out}"], "option hidden must be an integer"),
    ("piece-kind-not-a-name", ["meta-train", "{w}/tiny.yaml", "--set", "objective.drift.kind=[1, 2]",
                               "--out", "{out}"], "needs a mapping with a 'kind' name"),
    ("set-without-equals", ["meta-train", "{w}/tiny.yaml", "--set", FIVE_MB, "--out", "{out}"],
     "expected key=value"),
]


def run_main(capsys, argv: list[str]) -> tuple[int, str, float]:
    start = time.perf_counter()
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    seconds = time.perf_counter() - start
    return code, capsys.readouterr().err, seconds


def fill(argv: list[str], w: Path, out: Path) -> list[str]:
    return [a.replace("{w}", str(w)).replace("{out}", str(out)) for a in argv]


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []


@pytest.mark.parametrize("argv, message", [(r[1], r[2]) for r in ROWS], ids=[r[0] for r in ROWS])
def test_refused_in_one_line_before_any_work(world, tmp_path, capsys, argv, message):
    before = snapshot(world)
    out = tmp_path / "out"
    code, err, seconds = run_main(capsys, fill(argv, world, out))
    lines = err.strip().splitlines()
    assert code == 2, err[-2000:]
    assert len(lines) == 1, err[-2000:]
    assert "Traceback" not in err
    assert message in lines[0], lines[0][:2000]
    assert len(lines[0]) <= 1100  # a bad value is echoed shortened, never whole
    assert seconds < IN_PROCESS_SECONDS, f"took {seconds:.1f} s"
    assert files_under(out) == []  # nothing written: the refusal came before any work
    assert snapshot(world) == before  # nothing on disk changed or lost


@pytest.mark.parametrize("argv, message", [
    (["meta-train", "{w}/bomb_objective.yaml", "--out", "{out}"], "expands to more than"),
    (["meta-train", "{w}/bomb_train.yaml", "--out", "{out}"], "expands to more than"),
    (["inspect", "{w}/power.msgpack"], "beyond +-64"),
], ids=["alias-bomb-objective", "alias-bomb-train", "expression-huge-power"])
def test_small_files_that_hung_are_refused_in_a_subprocess(world, tmp_path, argv, message):
    """The same rows as a user runs them, with a timeout: a regression fails here instead of hanging the suite."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "metadisco", *fill(argv, world, tmp_path / "out")],
                          capture_output=True, text=True, timeout=SUBPROCESS_SECONDS, env=env)
    seconds = time.perf_counter() - start
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert message in lines[0]
    assert seconds < SUBPROCESS_SECONDS


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes whatever the permission bits say")
def test_permission_denied_is_cannot_read_or_write(world, tmp_path, capsys):
    config = _write_config(tmp_path / "locked.yaml", TINY)
    config.chmod(0)
    locked_dir = tmp_path / "locked_dir"
    locked_dir.mkdir()
    locked_dir.chmod(0o500)
    try:
        code, err, _ = run_main(capsys, ["meta-train", str(config), "--out", str(tmp_path / "o")])
        assert code == 2 and "cannot read YAML file" in err and len(err.strip().splitlines()) == 1
        code, err, _ = run_main(capsys, ["evaluate", "dpo", *E, "--out", str(locked_dir / "sub")])
        assert code == 2 and "cannot" in err and len(err.strip().splitlines()) == 1
        code, err, _ = run_main(capsys, ["evaluate", "dpo", *E, "--out", str(locked_dir)])
        assert code == 2 and "cannot write in --out" in err
    finally:
        config.chmod(0o600)
        locked_dir.chmod(0o700)


# ---------------------------------------------------------------------------------------------------------
# interrupted runs: a torn metrics line is dropped (and said), never merged; summary.json matches what was done


@pytest.mark.heavy
@pytest.mark.slow  # 32 s on 2 cores
def test_a_torn_metrics_line_is_dropped_on_resume_and_the_summary_matches(tmp_path, capsys):
    import json

    config = _write_config(tmp_path / "tiny.yaml", TINY)
    run = tmp_path / "run"
    assert main(["meta-train", str(config), "--out", str(run)]) == 0
    metrics = run / "metrics.jsonl"
    text = metrics.read_text()
    metrics.write_text(text[:-20])  # the last record cut mid-line, as a torn write leaves it
    capsys.readouterr()
    assert main(["meta-train", str(config), "--set", "generations=3", "--resume", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert "dropped a partial last line" in err and "the record of generation 1 is lost" in err
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]  # every line is whole JSON again
    assert [line["generation"] for line in lines] == [0, 1, 2]
    assert lines[1]["lost"] is True and lines[1]["fitness_mean"] is None
    assert lines[0]["fitness_mean"] is not None and lines[2]["fitness_mean"] is not None
    assert json.loads((run / "summary.json").read_text())["generations"] == 3
    assert (run / "meta_curve.png").is_file()

    # Fewer generations than the checkpoint has done: nothing to do, nothing lost, the summary says 3.
    objective = (run / "objective.msgpack").read_bytes()
    assert main(["meta-train", str(config), "--set", "generations=1", "--resume", "--out", str(run)]) == 0
    assert "has done 3 generations, more than generations=1: nothing to do" in capsys.readouterr().err
    assert json.loads((run / "summary.json").read_text())["generations"] == 3
    assert len(metrics.read_text().splitlines()) == 3
    assert (run / "objective.msgpack").read_bytes() == objective
