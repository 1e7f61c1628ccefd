"""metadisco sweep: a grid or random search over traced trainer settings in one compiled call; writes
DIR/config.yaml (resolved), DIR/sweep.json (per point: settings, final returns, mean / IQM / 95% CI, curve; the
best point), DIR/sweep.md (a table) and DIR/sweep.png."""

from __future__ import annotations

from metadisco.cli import common
from metadisco.core.errors import UserError


def add_parser(sub, name):
    p = sub.add_parser(name, help="grid or random search over hyperparameters, vmapped in one compiled call")
    common.add_config_options(p, "sweep config (see metadisco.search.sweep)",
                              "the random points and the seed keys (default: the config's `seed`)")
    p.add_argument("--out", default=None, help="output directory (not needed with --dry-run)")
    p.add_argument("--resume", action="store_true",
                   help="finish the sweep whose finished calls DIR/cells/ holds: only missing chunks of points "
                        "train (the config's `chunk`), and the files are those an uninterrupted sweep writes")
    common.add_distributed_option(p)
    common.add_dry_run_options(p)
    p.set_defaults(run=run)


def run(args) -> int:
    import yaml

    from metadisco.core.io import atomic_write_text, read_yaml, write_json
    from metadisco.core.schema import from_plain, with_overrides
    from metadisco.figures.sweep import plot_sweep
    from metadisco.parallel import devices
    from metadisco.search.sweep import SweepConfig, render_markdown, run_sweep, summarise

    cfg = from_plain(SweepConfig, with_overrides(read_yaml(args.config), common.seed_override(args), "sweep"))
    config, _, points = cfg.resolve()  # every value checked before any work
    if args.dry_run:
        return dry_run(args, cfg)
    if args.out is None:
        raise UserError("give --out DIR, or --dry-run to plan the sweep without one")
    out = common.output_dir(args.out)
    used = devices.select(args.devices)
    per_call = min(cfg.chunk or len(points), len(points))
    calls = -(-len(points) // per_call)
    split = "one compiled call" if calls == 1 else (
        f"{calls} compiled calls of {'' if len(points) % per_call == 0 else 'at most '}{per_call} point(s)")
    common.say(f"sweep: {len(points)} points x {cfg.seeds} seeds of {cfg.objective} on {cfg.env}, "
               f"{config.num_updates} updates of {config.batch_size} steps each, {split} over "
               f"{min(len(used), per_call * cfg.seeds)} device(s) (compiling first)")
    from metadisco.core.cells import CellStore
    from metadisco.runs.migrate import upgrade_records

    store = CellStore(out / "cells", plan_settings(cfg, len(used)), args.resume, "sweep", write=common.is_writer(),
                      output=out, upgrade=upgrade_records)  # a plan of an older version resumes (its spec read as now)
    summary = summarise(cfg, run_sweep(cfg, used, store))
    if not common.is_writer():  # another process of a multi-process run: process 0 writes and reports
        return 0
    atomic_write_text(out / "config.yaml", yaml.safe_dump(cfg.to_plain(), sort_keys=False))
    write_json(out / "sweep.json", summary)
    atomic_write_text(out / "sweep.md", render_markdown(summary))
    plot_sweep(summary, out / "sweep.png")
    best = summary["best"]
    ci = f" [{best['ci95'][0]:.1f}, {best['ci95'][1]:.1f}]" if best["ci95"] else ""
    common.say(f"best {', '.join(f'{k}={v:.4g}' for k, v in best['hyper'].items())}: IQM {best['iqm']:.1f}{ci}; "
               f"{summary['steps_per_second']:,.0f} env steps/s in {summary['seconds']:.1f}s; wrote {out}/sweep.json, "
               "sweep.md, sweep.png")
    return 0


def plan_settings(cfg, devices: int) -> dict:
    """What a sweep's cells/plan.json stores, and `--resume` compares: the sweep, its objective, the device count."""
    from metadisco.core.cells import tree_digest
    from metadisco.objectives.resolve import resolve_objective

    objective, meta = resolve_objective(cfg.objective)
    return {"sweep": cfg.to_plain(), "objective": {"spec": objective.to_spec(), "meta": tree_digest(meta)},
            "devices": devices}


def dry_run(args, cfg) -> int:
    """Plan the sweep: compile its one call, print its cost and an accelerator estimate; train and write nothing."""
    from metadisco.parallel import cost, devices
    from metadisco.search.sweep import plan_sweep

    acc = common.dry_run_accelerator(args)
    used = devices.select(args.devices)
    common.say("dry run: compiling the sweep's one call; nothing is trained or written")
    for line in cost.render_plan(plan_sweep(cfg, used), acc, len(used), "whole sweep",
                                 "time here not measured: the call is the sweep itself"):
        print(line)
    return 0

