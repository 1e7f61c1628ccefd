"""metadisco export: an objective as plain JAX files with its meta-parameters embedded, needing no metadisco at
run time: DiscoBench's OnPolicyRL loss.py / optim.py, or a standalone module for one's own trainer."""

from __future__ import annotations

from metadisco.cli.common import output_dir, say


def add_parser(sub, name):
    p = sub.add_parser(name, help="write an objective as plain JAX files (DiscoBench's loss.py / optim.py, or a "
                                  "standalone module)")
    p.add_argument("objective", metavar="OBJECTIVE",
                   help="built-in name (ppo, dpo), objective file, or meta-training run directory")
    p.add_argument("--format", dest="format", choices=("discobench", "jax"), required=True,
                   help="discobench: DiscoBench's OnPolicyRL loss.py (and optim.py for a non-default optimiser); "
                        "jax: objective.py with drift(ratio, advantage), value_loss(value, old_value, target), "
                        "actor_loss, make_optimizer")
    p.add_argument("--out", required=True, help="output directory (files of the same names are replaced)")
    p.set_defaults(run=run)


def run(args) -> int:
    import metadisco
    from metadisco.core.io import atomic_write_text
    from metadisco.objectives.export import About, export_files
    from metadisco.objectives.resolve import resolve
    from metadisco.trainers.algorithm import check_exportable

    resolved = resolve(args.objective)
    about = About(resolved.label, args.objective, str(resolved.file) if resolved.file else None,
                  metadisco.__version__)
    check_exportable(resolved.objective, resolved.label)
    files = export_files(resolved.objective, resolved.meta, about, args.format)  # every refusal before writing
    out = output_dir(args.out)
    for name, text in files.items():
        atomic_write_text(out / name, text)
        print(out / name)
    say(f"exported {resolved.label} ({args.format}) to {out}")
    return 0
