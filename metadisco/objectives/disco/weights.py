"""Disco103's released meta-parameters: `disco_103.npz` from google-deepmind/disco_rl (42 float32 arrays, 754,778
numbers, flat Haiku names such as `lstm/linear/w`), read into Haiku's parameter tree `{module: {"w", "b"}}` unchanged.

The shapes are the meta-network's (`meta_net`): its per-trajectory LSTM has 256 units over 27 input features, the
meta-LSTM 128 units over a 16-wide embedding, and the prediction targets 600 numbers."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import BinaryIO

import numpy as np

from metadisco.core.errors import UserError

PREDICTION_SIZE = 600
HIDDEN = 256  # the per-trajectory LSTM
META_HIDDEN = 128  # the per-lifetime meta-LSTM
INPUTS = 27  # features per step fed to the per-trajectory LSTM

_TRAJ = "lstm"
_META = "lstm/~/meta_lstm/~unroll"

# Haiku's module names and their (w, b) shapes, in the order Haiku creates them.
SHAPES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    f"{_TRAJ}/mlp/~/linear_0": ((PREDICTION_SIZE, 16), (16,)),  # y_net
    f"{_TRAJ}/mlp/~/linear_1": ((16, 1), (1,)),
    f"{_TRAJ}/mlp_1/~/linear_0": ((PREDICTION_SIZE, 16), (16,)),  # z_net
    f"{_TRAJ}/mlp_1/~/linear_1": ((16, 1), (1,)),
    f"{_TRAJ}/sequential/conv1_d": ((1, 18, 16), (16,)),  # action-conditional embedding
    f"{_TRAJ}/sequential/conv1_d_1": ((1, 32, 2), (2,)),
    f"{_TRAJ}/lstm/linear": ((INPUTS + HIDDEN, 4 * HIDDEN), (4 * HIDDEN,)),  # per-trajectory LSTM
    f"{_TRAJ}/linear": ((META_HIDDEN, HIDDEN), (HIDDEN,)),  # multiplicative interaction with the meta-LSTM
    f"{_TRAJ}/linear_1": ((HIDDEN, 1), (1,)),  # meta_input_emb
    f"{_TRAJ}/linear_2": ((HIDDEN, PREDICTION_SIZE), (PREDICTION_SIZE,)),  # y target
    f"{_TRAJ}/linear_3": ((HIDDEN, PREDICTION_SIZE), (PREDICTION_SIZE,)),  # z target
    f"{_TRAJ}/sequential_1/conv1_d": ((1, 2 * (HIDDEN + 2), 16), (16,)),  # policy target
    f"{_TRAJ}/linear_4": ((16, 1), (1,)),
    f"{_META}/mlp/~/linear_0": ((PREDICTION_SIZE, 16), (16,)),
    f"{_META}/mlp/~/linear_1": ((16, 1), (1,)),
    f"{_META}/mlp_1/~/linear_0": ((PREDICTION_SIZE, 16), (16,)),
    f"{_META}/mlp_1/~/linear_1": ((16, 1), (1,)),
    f"{_META}/sequential/conv1_d": ((1, 18, 16), (16,)),
    f"{_META}/sequential/conv1_d_1": ((1, 32, 2), (2,)),
    f"{_META}/mlp_2/~/linear_0": ((INPUTS + 2, 16), (16,)),
    f"{_META}/lstm/linear": ((16 + META_HIDDEN, 4 * META_HIDDEN), (4 * META_HIDDEN,)),
}
SIZE = sum(int(np.prod(w)) + int(np.prod(b)) for w, b in SHAPES.values())  # 754,778


def load_disco103(file: str | Path | BinaryIO, path: str | Path | None = None) -> dict[str, dict[str, np.ndarray]]:
    """The released file's arrays as Haiku's tree, bit for bit; a file that is not the meta-network's (a missing or
    extra array, another shape or dtype, a non-finite number) is a UserError naming what differs. `file`: a path or
    an open binary file (then `path` names it in messages)."""
    path = file if path is None else path
    try:
        is_zip = zipfile.is_zipfile(file)
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e})") from None
    if not is_zip:
        raise UserError(f"{path}: not an .npz (zip) archive; give disco_rl's update_rules/weights/disco_103.npz")
    try:
        with np.load(file, allow_pickle=False) as npz:
            flat = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise UserError(f"{path}: not a readable .npz of Disco103's meta-parameters ({e})") from None
    expected = {f"{module}/{part}": shape for module, (w, b) in SHAPES.items() for part, shape in (("w", w), ("b", b))}
    missing, extra = sorted(set(expected) - set(flat)), sorted(set(flat) - set(expected))
    if missing or extra:
        raise UserError(f"{path}: not Disco103's parameter names (missing {missing[:3]}, unexpected {extra[:3]}); "
                        "expected the 42 arrays of disco_rl's update_rules/weights/disco_103.npz")
    for name, shape in expected.items():
        array = flat[name]
        if array.shape != shape or array.dtype != np.float32:
            raise UserError(f"{path}: {name} is {array.dtype}{list(array.shape)}, expected float32{list(shape)}")
        if not np.isfinite(array).all():
            raise UserError(f"{path}: {name} holds non-finite numbers")
    return {module: {"w": flat[f"{module}/w"], "b": flat[f"{module}/b"]} for module in SHAPES}
