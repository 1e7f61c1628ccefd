"""Property tests of the input boundary (hypothesis): random and mutated YAML configs, `--set` values,
objective files and checkpoints (truncation, bit flips, field deletion, huge and non-finite numbers) give
either success or a one-line `UserError`, each within a time bound; nothing else (no other exception, no
hang, no multi-line message).

Examples are bounded (`max_examples`) and derandomised, so the suite's time is known and CI reruns the same
cases; `pytest --hypothesis-show-statistics` reports how many ran and how long they took. No example
trains: the boundary is what is tested, and every check it makes happens before training.
"""

from __future__ import annotations

import contextlib
import copy
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from flax import serialization
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tiny_meta import TINY

from metadisco.core import checkpoint as ckpt_lib
from metadisco.core.errors import UserError
from metadisco.core.safe_yaml import load_yaml
from metadisco.meta.load import parse_config
from metadisco.objectives import DRIFTS, OPTIMIZERS, VALUE_LOSSES, Objective
from metadisco.objectives.files import _checksum, objective_bytes, objective_from_bytes
from metadisco.runs.seeds import resolve_config

PER_CASE_SECONDS = 5.0
SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])

HOSTILE_TEXT = ["nan", ".nan", "inf", "-.inf", "1e30", "1.0e+30", "-1", "0", "1e-400", "1e400", "abc", "",
                "99999999999999999999999", "9" * 5000, "[1, 2]", "{a: 1}", "true", "null", "~", "*a", "&a [*a]",
                "0x10", "1_000", "CartPole-v1", "'quoted'", "- x", "{", "]", "\x00", "é", "2000000000"]


def hostile_numbers():
    return st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.sampled_from([0, -1, 1, 2**31, 2**32, 2**63, 2**64, 10**400, 2_000_000_000, 1e30, -0.0, 5e-324]),
    )


def hostile_values():
    return st.one_of(
        hostile_numbers(),
        st.sampled_from(HOSTILE_TEXT),
        st.text(max_size=12),
        st.booleans(),
        st.none(),
        st.lists(st.one_of(hostile_numbers(), st.text(max_size=4)), max_size=3),
        st.dictionaries(st.text(max_size=4), hostile_numbers(), max_size=2),
    )


def expect_success_or_one_line_error(fn, *args):
    """Run fn(*args): it may return or raise a `UserError` whose message is one line; nothing else."""
    start = time.perf_counter()
    try:
        result = fn(*args)
    except UserError as e:
        message = str(e)
        assert message and "\n" not in message, message[:500]
        assert len(message) < 2000, message[:500]
        result = e
    event("refused (UserError)" if isinstance(result, UserError) else "accepted")
    seconds = time.perf_counter() - start
    assert seconds < PER_CASE_SECONDS, f"{seconds:.1f} s"
    return result


# ---------------------------------------------------------------------------------------------------------
# configs


def _paths(tree, prefix=()):
    """Every path into nested dicts / lists, leaves and containers alike."""
    out = [prefix] if prefix else []
    if isinstance(tree, dict):
        for k, v in tree.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += _paths(v, (*prefix, i))
    return out


CONFIG_PATHS = _paths(TINY)


@st.composite
def mutated_configs(draw) -> str:
    """TINY with a few values replaced by hostile ones, keys deleted or added; as YAML text, maybe cut."""
    config = copy.deepcopy(TINY)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(CONFIG_PATHS))
        node = config
        try:
            for part in path[:-1]:
                node = node[part]
            action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
            if action == "replace":
                node[path[-1]] = draw(hostile_values())
            elif action == "delete" and isinstance(node, dict):
                del node[path[-1]]
            elif isinstance(node, dict):
                node[draw(st.sampled_from(["extra", "seedz", "hidden", "eps", "kind"]))] = draw(hostile_values())
        except (KeyError, IndexError, TypeError):  # an earlier mutation removed or replaced the path
            continue
    text = yaml.safe_dump(config)
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(text)))
        text = text[:cut]
    return text


@settings(max_examples=400, **SETTINGS)
@given(mutated_configs())
def test_mutated_yaml_configs(text):
    expect_success_or_one_line_error(lambda: parse_config(load_yaml(text, "the config")))


META_KEYS = ["generations", "seed", "start_scale", "eval_every", "strategy.sigma_init", "strategy.lr",
             "strategy.population_size", "strategy.sigma_decay", "strategy.settings.std_min", "tasks.0.timesteps",
             "tasks.0.seeds", "tasks.0.baseline", "tasks.0.train.lr", "tasks.0.train.num_envs",
             "tasks.0.train.hidden_sizes", "objective.drift.hidden", "objective.drift.eps", "objective.drift.kind",
             "objective.value_loss", "held_out_envs", "tasks.0", "tasks.5.env", "nope.deeper"]
TRAIN_KEYS = ["lr", "gamma", "gae_lambda", "ent_coef", "vf_coef", "max_grad_norm", "value_clip_eps",
              "final_window", "num_envs", "num_steps", "total_timesteps", "num_minibatches", "update_epochs",
              "hidden_sizes", "activation", "anneal_lr", "rollout_unroll"]
SET_TEXT = st.one_of(st.sampled_from(HOSTILE_TEXT), hostile_numbers().map(repr), st.text(max_size=16))


@settings(max_examples=400, **SETTINGS)
@given(st.sampled_from(TRAIN_KEYS), SET_TEXT)
def test_set_values_of_the_trainer(key, value):
    expect_success_or_one_line_error(resolve_config, "CartPole-v1", None, [f"{key}={value}"])


@settings(max_examples=400, **SETTINGS)
@given(st.lists(st.tuples(st.sampled_from(META_KEYS), SET_TEXT), min_size=1, max_size=3))
def test_set_values_of_a_meta_config(assignments):
    expect_success_or_one_line_error(parse_config, TINY, [f"{k}={v}" for k, v in assignments])


# ---------------------------------------------------------------------------------------------------------
# objective files and checkpoints: bytes damaged, fields deleted, numbers made hostile


def _objective_file() -> bytes:
    objective = Objective(drift=DRIFTS.make("lpo", hidden=4), value_loss=VALUE_LOSSES.make("learned", hidden=(3,)),
                          optimizer=OPTIMIZERS.make("adam"))
    meta = objective.zero_meta()
    return objective_bytes(objective, meta)


OBJECTIVE_BYTES = _objective_file()


def _leaf_paths(tree, prefix=()):
    if isinstance(tree, dict) and tree:
        out = [prefix] if prefix else []
        for k, v in tree.items():
            out += _leaf_paths(v, (*prefix, k))
        return out
    return [prefix]


@st.composite
def damaged_bytes(draw, original: bytes, resign) -> bytes:
    """`original` truncated, bit-flipped, or decoded, mutated (field deleted, value made hostile) and re-encoded
    with its checksum recomputed by `resign` (so the checks behind the checksum are reached)."""
    kind = draw(st.sampled_from(["truncate", "flip", "delete", "hostile", "hostile"]))
    if kind == "truncate":
        return original[:draw(st.integers(0, len(original) - 1))]
    if kind == "flip":
        data = bytearray(original)
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        return bytes(data)
    payload = serialization.msgpack_restore(original)
    path = draw(st.sampled_from(_leaf_paths(payload)))
    node = payload
    for part in path[:-1]:
        node = node[part]
    if kind == "delete":
        del node[path[-1]]
    else:
        old = node[path[-1]]
        shapes = st.sampled_from([(), (1,), (2, 3), (4, 1), (8, 4)])
        arrays = st.tuples(shapes, hostile_numbers()).map(
            lambda sv: np.full(sv[0], sv[1] if not isinstance(sv[1], int) or abs(sv[1]) < 2**31 else np.inf,
                               np.float32))
        node[path[-1]] = draw(st.one_of(hostile_values(), arrays) if isinstance(old, np.ndarray) else hostile_values())
    if draw(st.booleans()):
        with contextlib.suppress(Exception):  # a value msgpack cannot encode (a huge int) cannot be signed
            payload = resign(payload)
    try:
        return serialization.msgpack_serialize(payload)
    except Exception:  # msgpack cannot encode it: that file cannot exist; send the original cut instead
        return original[:-1]


def _resign_objective(payload: dict) -> dict:
    payload = {k: v for k, v in payload.items() if k != "sha256"}
    return {**payload, "sha256": _checksum(payload["spec"], payload["meta"])}


@settings(max_examples=400, **SETTINGS)
@given(damaged_bytes(OBJECTIVE_BYTES, _resign_objective))
def test_damaged_objective_files(data):
    result = expect_success_or_one_line_error(objective_from_bytes, data)
    if not isinstance(result, UserError):  # what loads is whole and finite
        _, meta = result
        import jax

        assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(meta))


def _checkpoint_file() -> bytes:
    ckpt = ckpt_lib.Checkpoint(3, np.asarray([0, 42], np.uint32), [np.zeros((4, 8), np.float32),
                                                                    np.ones(3, np.float32), np.asarray(7, np.int32)],
                               {"CartPole-v1": 100.0}, 3, 1234, "ab" * 32, {"fitness_of_initial_mean": 0.5})
    with tempfile.TemporaryDirectory() as directory:
        return ckpt_lib.save(Path(directory), ckpt).read_bytes()


def _resign_checkpoint(payload: dict) -> dict:
    body = {k: v for k, v in payload.items() if k != "sha256"}
    return {**body, "sha256": ckpt_lib._digest(body)}


CHECKPOINT_BYTES = _checkpoint_file()


@pytest.fixture(scope="module")
def checkpoint_path(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("checkpoints") / "gen_000003.msgpack"


@settings(max_examples=400, **SETTINGS)
@given(data=damaged_bytes(CHECKPOINT_BYTES, _resign_checkpoint))
def test_damaged_checkpoints(checkpoint_path, data):
    checkpoint_path.write_bytes(data)
    expect_success_or_one_line_error(ckpt_lib.load, checkpoint_path)
