"""Where the suite's time goes: each test file's seconds, and how many of them XLA spent compiling.

    pytest -p tests.compile_report

prints, after the run, the files that took longest: their tests' seconds (fixtures included), the seconds JAX spent
in XLA's backend compiler, tracing and lowering in the test process (its monitoring events), and compiling's share.
Commands a test starts in a child process compile there, out of this count: such files show a low share.
Works with and without pytest-xdist (each worker sends its figures to the controller).
"""

from __future__ import annotations

import collections
import json
import time

import pytest

EVENTS = {"/jax/core/compile/backend_compile_duration": "compile",
          "/jax/core/compile/jaxpr_trace_duration": "trace",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower"}
SHOWN = 30

_seconds = collections.defaultdict(float)  # "compile", "trace", "lower" -> seconds so far in this process
_files: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


def _listen(event: str, duration: float, **_):
    if event in EVENTS:
        _seconds[EVENTS[event]] += duration


def pytest_configure(config):
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_listen)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before, start = dict(_seconds), time.perf_counter()
    yield
    counts = _files[item.nodeid.split("::")[0]]
    counts["wall"] += time.perf_counter() - start
    for name, seconds in _seconds.items():
        counts[name] += seconds - before.get(name, 0.0)


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # an xdist worker: the controller prints
        session.config.workeroutput["compile_report"] = json.dumps(_files)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for file, counts in json.loads(getattr(node, "workeroutput", {}).get("compile_report", "{}")).items():
        _files[file].update(counts)


def pytest_terminal_summary(terminalreporter):
    if not _files:
        return
    total = collections.Counter()
    for counts in _files.values():
        total.update(counts)
    write = terminalreporter.write_line
    terminalreporter.section("compile report: seconds per test file (this process's compiling; children apart)")
    write(f"{'wall':>8} {'compile':>8} {'trace+lower':>11} {'share':>6}  file")
    rows = sorted(_files.items(), key=lambda item: -item[1]["wall"])
    for file, c in [*rows[:SHOWN], ("all files", total)]:
        share = c["compile"] / c["wall"] if c["wall"] else 0.0
        write(f"{c['wall']:8.1f} {c['compile']:8.1f} {c['trace'] + c['lower']:11.1f} {share:6.0%}  {file}")
