"""metadisco catalogue: the recipes and the discovered objectives that ship with metadisco, one line each."""

from __future__ import annotations


def add_parser(sub, name):
    p = sub.add_parser(name, help="list the recipes (meta-train NAME) and catalogue objectives (catalogue:NAME)")
    p.set_defaults(run=run)


def run(args) -> int:
    from metadisco.core import shipped

    recipes = shipped.recipes()
    print(f"recipes ({len(recipes)}): metadisco meta-train NAME --out DIR")
    for name, path in recipes.items():
        print(f"  {name:28s} {shipped.recipe_summary(path)}")
    entries = shipped.catalogue()
    print(f"\ncatalogue ({len(entries)}): --objective {shipped.CATALOGUE_PREFIX}NAME, wherever an objective is taken")
    for name, entry in entries.items():
        print(f"  {name:34s} {entry['what']} (meta-training lr: {entry['meta_training_lr']}). "
              f"Tuned: {entry['tuned']}")
    return 0
