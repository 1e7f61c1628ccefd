"""Objective files: round trips give identical functions; damaged, foreign and unknown-kind files are clear errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization

from metadisco.core.errors import UserError
from metadisco.objectives import DRIFTS, DriftInputs, Objective, Progress, load_objective, save_objective
from metadisco.objectives.files import FORMAT, _checksum, objective_bytes
from metadisco.objectives.resolve import resolve_objective


def random_like(tree, seed, scale=0.5):
    leaves, treedef = jax.tree.flatten(tree)
    keys = jax.random.split(jax.random.PRNGKey(seed), max(len(leaves), 1))
    return jax.tree.unflatten(treedef, [scale * jax.random.normal(k, x.shape)
                                        for k, x in zip(keys, leaves, strict=False)])


@pytest.fixture
def talpo_file(tmp_path):
    objective = Objective(drift=DRIFTS.make("talpo", hidden=16))
    meta = random_like(objective.zero_meta(), 0)
    path = save_objective(tmp_path / "talpo.msgpack", objective, meta)
    return path, objective, meta


def test_round_trip_gives_the_same_objective_and_function(talpo_file):
    path, objective, meta = talpo_file
    loaded, loaded_meta = load_objective(path)
    assert loaded == objective
    assert jax.tree.structure(loaded_meta) == jax.tree.structure(meta)
    for a, b in zip(jax.tree.leaves(loaded_meta), jax.tree.leaves(meta), strict=True):
        assert a.dtype == jnp.float32 and np.array_equal(np.asarray(a), np.asarray(b))
    ratio = jnp.exp(jnp.linspace(-2.0, 2.0, 101))
    adv = jnp.linspace(-3.0, 3.0, 101)
    progress = Progress(jnp.float32(0.3), jnp.float32(200.0))
    before = objective.drift(meta["drift"], DriftInputs(ratio, adv), progress)
    assert np.array_equal(before, loaded.drift(loaded_meta["drift"], DriftInputs(ratio, adv), progress))
    # Saving what was loaded gives the same bytes: the format is deterministic.
    assert objective_bytes(loaded, loaded_meta) == path.read_bytes()


def test_handcrafted_objectives_round_trip_and_resolve(tmp_path):
    path = save_objective(tmp_path / "dpo.msgpack", Objective(drift=DRIFTS.make("dpo", alpha=1.5)), {
        "drift": {}, "value_loss": {}, "optimizer": {}})
    objective, meta = resolve_objective(str(path))
    assert objective.drift == DRIFTS.make("dpo", alpha=1.5)
    assert meta == {"drift": {}, "value_loss": {}, "optimizer": {}}


def test_save_refuses_meta_that_does_not_match_the_spec(tmp_path):
    objective = Objective(drift=DRIFTS.make("lpo", hidden=8))
    bad = {"drift": {"w1": jnp.zeros((8, 9)), "w2": jnp.zeros((8, 1))}, "value_loss": {}, "optimizer": {}}
    with pytest.raises(UserError, match="shape"):
        save_objective(tmp_path / "x.msgpack", objective, bad)
    assert not (tmp_path / "x.msgpack").exists()


def _error(path) -> str:
    with pytest.raises(UserError) as info:
        load_objective(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_truncated_and_damaged_files(talpo_file, tmp_path):
    path, _, meta = talpo_file
    data = path.read_bytes()
    for i, damaged in enumerate([data[: len(data) // 2], data[:7], b"", data + b"\x00"]):
        p = tmp_path / f"bad{i}.msgpack"
        p.write_bytes(damaged)
        assert "damaged" in _error(p)
    flipped = bytearray(data)
    flipped[data.index(np.asarray(meta["drift"]["w1"]).tobytes()) + 100] ^= 0xFF  # still parses; checksum catches it
    (tmp_path / "flipped.msgpack").write_bytes(bytes(flipped))
    assert "checksum" in _error(tmp_path / "flipped.msgpack")


def test_foreign_files(tmp_path):
    (tmp_path / "a.msgpack").write_bytes(serialization.msgpack_serialize({"params": {"w": np.zeros(3)}}))
    assert "not a metadisco objective file" in _error(tmp_path / "a.msgpack")
    (tmp_path / "b.json").write_text('{"format": "metadisco-objective"}')
    assert "damaged or not a metadisco objective file" in _error(tmp_path / "b.json")
    assert "no objective file" in _error(tmp_path / "missing.msgpack")
    newer = {"format": FORMAT, "version": 99, "spec": {}, "meta": {}}
    (tmp_path / "c.msgpack").write_bytes(serialization.msgpack_serialize(newer))
    assert "newer" in _error(tmp_path / "c.msgpack")


def _signed(payload: dict) -> bytes:
    """A payload with a valid checksum, so loading reaches the checks behind it."""
    return serialization.msgpack_serialize({**payload, "sha256": _checksum(payload["spec"], payload["meta"])})


def test_unknown_kind_and_mismatched_meta(tmp_path):
    payload = {"format": FORMAT, "version": 1, "spec": {"drift": {"kind": "lpoo"}}, "meta": {}}
    (tmp_path / "k.msgpack").write_bytes(_signed(payload))
    message = _error(tmp_path / "k.msgpack")
    assert "unknown drift 'lpoo'" in message and "did you mean 'lpo'" in message
    payload = {"format": FORMAT, "version": 1, "spec": {"drift": {"kind": "lpo", "hidden": 4}},
               "meta": {"drift": {"w1": np.zeros((8, 5), np.float32), "w2": np.zeros((4, 1), np.float32)},
                        "value_loss": {}, "optimizer": {}}}
    (tmp_path / "m.msgpack").write_bytes(_signed(payload))
    assert "drift/w1' has shape (8, 5), expected (8, 4)" in _error(tmp_path / "m.msgpack")


def test_a_file_without_checksum_is_refused(tmp_path):
    payload = {"format": FORMAT, "version": 1, "spec": {"drift": {"kind": "ppo"}},
               "meta": {"drift": {}, "value_loss": {}, "optimizer": {}}}
    (tmp_path / "n.msgpack").write_bytes(serialization.msgpack_serialize(payload))
    assert "no checksum" in _error(tmp_path / "n.msgpack")
    (tmp_path / "s.msgpack").write_bytes(_signed(payload))
    assert load_objective(tmp_path / "s.msgpack")[0].drift == DRIFTS.make("ppo")


def test_non_finite_meta_parameters_are_refused(tmp_path):
    w1 = np.zeros((8, 4), np.float32)
    w1[2, 3] = np.nan
    payload = {"format": FORMAT, "version": 1, "spec": {"drift": {"kind": "lpo", "hidden": 4}},
               "meta": {"drift": {"w1": w1, "w2": np.full((4, 1), np.inf, np.float32)},
                        "value_loss": {}, "optimizer": {}}}
    (tmp_path / "nan.msgpack").write_bytes(_signed(payload))
    assert "'drift/w1' holds 1 non-finite value(s) (first: nan)" in _error(tmp_path / "nan.msgpack")
