"""`metadisco import --format open`: OPEN's flat .npy vectors become objective files whose meta-parameters are
the same numbers in OPEN's order (same norm); bad files are refused in one line with status 2. A released
vector (OPEN's `rl_optimizer/pretrained/breakout_OPEN.npy`, not shipped here) is checked when it is present:
at $OPEN_PRETRAINED_NPY, else /tmp/breakout_OPEN.npy."""

import os
from pathlib import Path

import jax
import numpy as np
import pytest

from metadisco.cli import main
from metadisco.objectives import load_objective
from metadisco.objectives import open_optimizer as O


def opens_order(meta) -> np.ndarray:
    """OPEN's saving order: jax.flatten_util.ravel_pytree of its meta tree (its ParameterReshaper)."""
    return np.asarray(jax.flatten_util.ravel_pytree(meta)[0], np.float32)


@pytest.mark.parametrize("gru,hidden,seed", [(8, 16, 0), (8, 16, 1), (16, 32, 2)])
def test_a_vector_in_opens_order_round_trips(tmp_path, capsys, gru, hidden, seed):
    zero = O.OpenOptimizer(gru=gru, hidden=hidden).zero_meta()
    leaves, treedef = jax.tree.flatten(zero)
    rng = np.random.default_rng(seed)
    meta = jax.tree.unflatten(treedef, [rng.normal(size=x.shape).astype(np.float32) for x in leaves])
    vector = opens_order(meta)
    np.save(tmp_path / "opt.npy", vector)
    out = tmp_path / "open.msgpack"
    assert main(["import", "--format", "open", str(tmp_path / "opt.npy"), "--out", str(out)]) == 0
    assert f"gru {gru}, hidden {hidden}" in capsys.readouterr().out
    objective, loaded = load_objective(out)
    assert objective.optimizer.name == "open" and not objective.optimizer.residual
    assert (objective.optimizer.gru, objective.optimizer.hidden) == (gru, hidden)
    assert objective.drift.name == "ppo" and objective.value_loss.name == "clipped_l2"
    jax.tree.map(np.testing.assert_array_equal, loaded["optimizer"], meta)  # every number at its own path
    np.testing.assert_array_equal(O.meta_to_vector(loaded["optimizer"]), vector)
    assert np.linalg.norm(O.meta_to_vector(loaded["optimizer"])) == np.linalg.norm(vector)


def bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    good = np.zeros(1211, np.float32)
    files = {}

    def save(name, array):
        np.save(tmp_path / name, array)
        return tmp_path / name

    files["short"] = (save("short.npy", good[:1000]), "1,211 numbers")
    nan = good.copy()
    nan[5] = np.nan
    files["nan"] = (save("nan.npy", nan), "non-finite")
    files["2d"] = (save("2d.npy", good.reshape(7, 173)), "1-D")
    files["strings"] = (save("strings.npy", np.array(["a", "b"])), "not numbers")
    (tmp_path / "text.npy").write_text("not numpy\n")
    files["text"] = (tmp_path / "text.npy", "not a .npy file")
    np.savez(tmp_path / "both.npz", a=good)
    files["npz"] = (tmp_path / "both.npz", "not a .npy file")
    files["missing"] = (tmp_path / "absent.npy", "no file")
    return files


def test_bad_files_are_refused_in_one_line(tmp_path, capsys):
    for name, (path, message) in bad_files(tmp_path).items():
        out = tmp_path / f"{name}.msgpack"
        assert main(["import", "--format", "open", str(path), "--out", str(out)]) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, (name, err)
        assert not out.exists()


def test_unknown_format_is_refused(tmp_path, capsys):
    np.save(tmp_path / "v.npy", np.zeros(1211, np.float32))
    with pytest.raises(SystemExit) as e:
        main(["import", "--format", "velo", str(tmp_path / "v.npy"), "--out", str(tmp_path / "o.msgpack")])
    assert e.value.code == 2


RELEASED = Path(os.environ.get("OPEN_PRETRAINED_NPY", "/tmp/breakout_OPEN.npy"))


@pytest.mark.skipif(not RELEASED.exists(), reason="OPEN's released vector is not here (fetch "
                    "AlexGoldie/rl-learned-optimization; set OPEN_PRETRAINED_NPY)")
def test_a_released_vector_loads_unchanged(tmp_path, capsys):
    vector = np.load(RELEASED, allow_pickle=False)
    out = tmp_path / "released.msgpack"
    assert main(["import", "--format", "open", str(RELEASED), "--out", str(out)]) == 0
    _, meta = load_objective(out)
    np.testing.assert_array_equal(O.meta_to_vector(meta["optimizer"]), vector)
    np.testing.assert_allclose(np.linalg.norm(O.meta_to_vector(meta["optimizer"])), np.linalg.norm(vector))
    # its first numbers are the GRU's hn bias, its last the MLP's output kernel (sorted keys, as JAX flattens)
    np.testing.assert_array_equal(meta["optimizer"]["gru_params"]["params"]["hn"]["bias"], vector[:8])
    np.testing.assert_array_equal(np.ravel(meta["optimizer"]["params"]["params"]["layers_6"]["kernel"]),
                                  vector[-48:])
