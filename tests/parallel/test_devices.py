"""Choosing the CPU device count before JAX starts (`metadisco.parallel.devices`), in fresh Python processes."""

import os
import subprocess
import sys

import pytest

from metadisco.parallel import devices


def device_count_in_fresh_process(code: str, xla_flags: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([sys.executable, "-c", code + "\nimport jax\nprint(jax.local_device_count())"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()[-1]


@pytest.mark.parametrize("code, xla_flags, expected", [
    ("from metadisco.parallel.devices import use_all_cores; use_all_cores()", None, str(devices.cpu_count())),
    # The user's XLA_FLAGS win unless the count is asked for explicitly (the command line's --devices).
    ("from metadisco.parallel.devices import use_all_cores; use_all_cores(override=False)",
     "--xla_force_host_platform_device_count=5", "5"),
    ("from metadisco.parallel.devices import use_all_cores; use_all_cores(3)",
     "--xla_force_host_platform_device_count=5", "3"),
    # Imported but not started yet: still in time.
    ("import jax; from metadisco.parallel.devices import use_all_cores; use_all_cores(3)", None, "3"),
])
def test_use_all_cores_before_jax_starts(code, xla_flags, expected):
    assert device_count_in_fresh_process(code, xla_flags) == expected


def test_too_late_once_jax_has_started():
    import jax

    jax.devices()  # started, with conftest's 4
    assert devices.use_all_cores(4) == 4  # what it already has: nothing to do
    with pytest.raises(RuntimeError, match="already started with 4 CPU device"):
        devices.use_all_cores(2)


def test_flag_parsing(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_foo=1 --xla_force_host_platform_device_count=6")
    assert devices.flag_in_env() == 6
    monkeypatch.setenv("XLA_FLAGS", "--xla_foo=1")
    assert devices.flag_in_env() is None
    monkeypatch.delenv("XLA_FLAGS")
    assert devices.flag_in_env() is None
    assert devices.cpu_count() >= 1


@pytest.mark.parametrize("flags, expected", [
    ("", "--xla_force_host_platform_device_count=2"),
    ("--xla_backend_optimization_level=1",
     "--xla_backend_optimization_level=1 --xla_force_host_platform_device_count=2"),
    ("--xla_force_host_platform_device_count=4 --xla_foo=1", "--xla_foo=1 --xla_force_host_platform_device_count=2"),
])
def test_with_device_count_replaces_only_the_count(flags, expected):
    assert devices.with_device_count(flags, 2) == expected


@pytest.mark.parametrize("before, after, on", [
    (None, "--xla_gpu_deterministic_ops=true", True),
    ("--xla_foo=1", "--xla_foo=1 --xla_gpu_deterministic_ops=true", True),
    # The user's own choice wins, either way.
    ("--xla_gpu_deterministic_ops=false", "--xla_gpu_deterministic_ops=false", False),
    ("--xla_gpu_deterministic_ops", "--xla_gpu_deterministic_ops", True),
])
def test_deterministic_gpu_kernels_are_asked_for_unless_the_user_chose(monkeypatch, before, after, on):
    if before is None:
        monkeypatch.delenv("XLA_FLAGS", raising=False)
        assert not devices.gpu_deterministic_ops()
    else:
        monkeypatch.setenv("XLA_FLAGS", before)
    devices.use_deterministic_gpu()
    assert os.environ["XLA_FLAGS"] == after and devices.gpu_deterministic_ops() is on


def test_the_command_asks_for_deterministic_gpu_kernels_and_the_cpu_accepts_the_flag():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    code = ("import sys, os; from metadisco.cli import main; code = main(['envs']); "
            "print(os.environ['XLA_FLAGS'], file=sys.stderr); sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "--xla_gpu_deterministic_ops=true" in proc.stderr.splitlines()[-1]
