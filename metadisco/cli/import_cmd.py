"""metadisco import: turn another project's saved learned piece into a metadisco objective file.

    metadisco import --format open FILE.npy --out OBJECTIVE.msgpack
    metadisco import --format disco103 disco_103.npz --out disco103.msgpack

`--format open`: a flat float32 vector of OPEN's meta-parameters (Goldie et al., NeurIPS 2024; its released
`rl_optimizer/pretrained/*_OPEN.npy`, or any `curr_param_N.npy` its training saved), unflattened in OPEN's own
order into the `open` optimiser (`metadisco.objectives.open_optimizer`); drift and value loss are PPO's, as in
OPEN's inner loop. 1,211 numbers are OPEN's default sizes (GRU 8, hidden 16), 3,571 its `--larger` (16, 32).

`--format disco103`: DiscoRL's released meta-parameters (Oh et al., Nature 2025; google-deepmind/disco_rl
`disco_rl/update_rules/weights/disco_103.npz`), 42 arrays read unchanged into the update rule `disco`
(`metadisco.objectives.disco`); the objective is that rule alone, trained with algorithm update_rule.
"""

from __future__ import annotations

import io

MAX_NPY_BYTES = 2**24  # OPEN's vectors are 5 to 15 kB; anything near this is not one
MAX_NPZ_BYTES = 2**24  # Disco103's file is 3.0 MB


def add_parser(sub, name):
    p = sub.add_parser(name, help="import another project's learned piece (OPEN's optimiser .npy, DiscoRL's Disco103 "
                                  ".npz) as an objective file")
    p.add_argument("file", metavar="FILE", help="the file to import (--format open: a .npy vector; --format "
                                                "disco103: disco_103.npz)")
    p.add_argument("--format", required=True, choices=("open", "disco103"),
                   help="open: OPEN's learned optimiser, a flat .npy vector (Goldie et al., NeurIPS 2024); disco103: "
                        "DiscoRL's released update rule, disco_103.npz (Oh et al., Nature 2025)")
    p.add_argument("--out", required=True, metavar="OBJECTIVE", help="objective file to write (.msgpack)")
    p.set_defaults(run=run)


def read_npy_vector(path: str):
    """A .npy file's 1-D vector of finite numbers as float32, or a one-line `UserError` naming what is wrong."""

    import numpy as np

    from metadisco.core.errors import UserError
    from metadisco.core.io import read_bounded_bytes

    data = read_bounded_bytes(path, "file", MAX_NPY_BYTES, "an OPEN .npy vector is a few kB")
    if not data.startswith(b"\x93NUMPY"):
        raise UserError(f"{path!r} is not a .npy file (no NUMPY header); give the vector OPEN saved with numpy.save")
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as e:  # not a .npy (or a pickled object array, refused: loading it could run code)
        raise UserError(f"{path!r} is not a .npy array file ({type(e).__name__}: {e}); give the vector OPEN "
                        "saved with numpy.save") from None
    if not isinstance(array, np.ndarray):  # an .npz archive
        raise UserError(f"{path!r} is an .npz archive, not a .npy array; give one vector (numpy.save)")
    if array.dtype.kind not in "fiu":
        raise UserError(f"{path!r} holds {array.dtype} values, not numbers")
    if array.ndim != 1:
        raise UserError(f"{path!r} holds an array of shape {array.shape}; OPEN saves a flat vector (1-D)")
    values = array.astype(np.float32)
    bad = ~np.isfinite(values)
    if bad.any():
        raise UserError(f"{path!r} holds {int(bad.sum()):,} non-finite value(s) (first at index "
                        f"{int(np.argmax(bad))}: {values[bad][0]}); meta-parameters must be finite numbers")
    return values


def open_objective(vector):
    """(Objective with OPEN's optimiser at the sizes `vector`'s length implies, its meta-parameters)."""
    from metadisco.core.errors import UserError
    from metadisco.objectives import OPTIMIZERS, Objective
    from metadisco.objectives.open_optimizer import meta_from_vector, meta_size, sizes_for_length

    sizes = sizes_for_length(vector.size)
    if sizes is None:
        raise UserError(f"an OPEN vector has {meta_size(8, 16):,} numbers (GRU 8, hidden 16) or "
                        f"{meta_size(16, 32):,} (--larger: GRU 16, hidden 32); this one has {vector.size:,}")
    gru, hidden = sizes
    objective = Objective(optimizer=OPTIMIZERS.make("open", gru=gru, hidden=hidden))
    meta = objective.zero_meta()
    meta["optimizer"] = meta_from_vector(vector, gru, hidden)
    return objective, meta


def disco103_objective(path: str):
    """(Objective with DiscoRL's update rule, its meta-parameters read from the released `disco_103.npz`)."""
    from metadisco.core.io import read_bounded_bytes
    from metadisco.objectives import UPDATE_RULES, Objective
    from metadisco.objectives.disco.weights import load_disco103

    data = read_bounded_bytes(path, "file", MAX_NPZ_BYTES, "Disco103's .npz is 3.0 MB")
    objective = Objective(update_rule=UPDATE_RULES.make("disco"))
    return objective, {"update_rule": load_disco103(io.BytesIO(data), path)}


def run(args) -> int:
    import numpy as np

    from metadisco.objectives import save_objective

    if args.format == "disco103":
        objective, meta = disco103_objective(args.file)
        path = save_objective(args.out, objective, meta)
        arrays = [a for module in meta["update_rule"].values() for a in module.values()]
        norm = float(np.sqrt(sum(np.sum(np.square(a.astype(np.float64))) for a in arrays)))
        print(f"wrote {path}: update rule 'disco' (Disco103), {sum(a.size for a in arrays):,} meta-parameters in "
              f"{len(arrays)} arrays from {args.file}, norm {norm:.6g}")
        return 0
    vector = read_npy_vector(args.file)
    objective, meta = open_objective(vector)
    path = save_objective(args.out, objective, meta)
    norm = float(np.linalg.norm(vector.astype(np.float64)))
    opt = objective.optimizer
    print(f"wrote {path}: optimizer 'open' (gru {opt.gru}, hidden {opt.hidden}), {vector.size:,} meta-parameters "
          f"from {args.file}, norm {norm:.6g}")
    return 0
