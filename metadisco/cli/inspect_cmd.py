"""metadisco inspect: show an objective's pieces: kinds, options, meta-parameter shapes and counts."""

from __future__ import annotations

import json


def add_parser(sub, name):
    p = sub.add_parser(name, help="show an objective's pieces: kinds, options and parameter counts")
    p.add_argument("objective", metavar="OBJECTIVE",
                   help="built-in name (ppo, dpo), objective file, or meta-training run directory")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)


def describe_objective(objective, meta) -> dict:
    """{"pieces": {slot: {"kind", "options", "learnable", "parameters", "shapes", "norm"}}, "parameters": total}.

    `norm` is the L2 norm of the piece's meta-parameters: its distance from the handcrafted baseline (0 = equal).
    """
    import jax
    import numpy as np

    from metadisco.core.io import to_jsonable

    pieces = {}
    for slot, piece in objective.pieces().items():
        piece_meta = meta.get(slot, {}) if isinstance(meta, dict) else {}
        flat = jax.tree_util.tree_flatten_with_path(piece_meta)[0]
        shapes = {"/".join(str(getattr(k, "key", k)) for k in path): list(np.shape(x)) for path, x in flat}
        pieces[slot] = {
            "kind": piece.name,
            "plugin": piece.plugin,  # the module a plugin's piece came from; None for metadisco's own
            "options": to_jsonable(piece.options()),
            "learnable": piece.learnable,
            "parameters": int(sum(np.size(x) for _, x in flat)),
            "shapes": shapes,
            "norm": float(np.sqrt(sum(np.sum(np.square(np.asarray(x, np.float64))) for _, x in flat))),
        }
    return {"pieces": pieces, "parameters": sum(p["parameters"] for p in pieces.values())}


def run(args) -> int:
    from metadisco.core.io import to_jsonable
    from metadisco.objectives.resolve import resolve_objective

    objective, meta = resolve_objective(args.objective)
    info = {"objective": args.objective, **describe_objective(objective, meta)}
    if args.json:  # strict JSON: a non-finite number (none should reach here) is null, never NaN
        print(json.dumps(to_jsonable(info), indent=2, allow_nan=False))
        return 0
    print(f"objective {args.objective}: {info['parameters']:,} meta-parameters")
    for slot, piece in info["pieces"].items():
        options = ", ".join(f"{k}={v}" for k, v in piece["options"].items()) or "-"
        learned = (f"{piece['parameters']:,} parameters, norm {piece['norm']:.4g}" if piece["learnable"]
                   else "handcrafted")
        plugin = f" (plugin {piece['plugin']})" if piece["plugin"] else ""
        print(f"  {slot:11s} {piece['kind']:11s} {learned}{plugin}")
        print(f"  {'':11s} options: {options}")
        for path, shape in piece["shapes"].items():
            print(f"  {'':11s}   {path}: {tuple(shape)}")
    return 0
