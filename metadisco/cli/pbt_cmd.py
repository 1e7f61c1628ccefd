"""metadisco pbt: population-based training of one config, vectorised on this machine; writes DIR/config.yaml,
DIR/metrics.jsonl (per round), DIR/lineage.json, DIR/summary.json, DIR/pbt.png and DIR/checkpoints/ (resume
with --resume, bit for bit)."""

from __future__ import annotations

from metadisco.cli import common
from metadisco.core.errors import DiskFullError, UserError


def add_parser(sub, name):
    p = sub.add_parser(name, help="population-based training (exploit / explore of hyperparameters)")
    common.add_config_options(p, "PBT config (see metadisco.search.pbt.config)",
                              "initial hyperparameters, exploration and the seed keys (default: the config's `seed`)")
    p.add_argument("--out", default=None, help="run directory (not needed with --dry-run)")
    common.add_distributed_option(p)
    common.add_dry_run_options(p)
    common.add_track_option(p)
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.set_defaults(run=run)


def run(args) -> int:
    from metadisco.core.io import read_yaml
    from metadisco.core.schema import from_plain, plain_data, with_overrides
    from metadisco.parallel import devices
    from metadisco.runs.migrate import read_config_schema
    from metadisco.runs.rundir import RunDir
    from metadisco.search.pbt.config import PBTConfig
    from metadisco.search.pbt.run import run_pbt

    cfg = from_plain(PBTConfig, with_overrides(read_config_schema(read_yaml(args.config), args.config),
                                               common.seed_override(args), "PBT"))
    config, _, rounds = cfg.resolve()  # every value checked before any work
    if args.dry_run:
        return dry_run(args, cfg)
    if args.out is None:
        raise UserError("give --out DIR (the run directory), or --dry-run to plan the run without one")
    tracking = common.open_tracking(args, args.out, plain_data(cfg))  # --track checked before any work
    run_dir = RunDir(args.out, say=common.say, writer=common.is_writer())
    run_dir.check_before_run(args.resume)
    common.say(f"pbt: {cfg.population} agents on {cfg.env}, {rounds} rounds of {cfg.ready.updates} updates of "
               f"{config.batch_size} steps (compiling first)")
    try:
        result = run_pbt(cfg, args.out, args.resume, devices.select(args.devices), common.say,
                         progress=common.show_progress(args), track=tracking)
    except DiskFullError as e:
        raise UserError(f"{e}; {run_dir.disk_full_advice()}") from None
    finally:
        if tracking is not None:
            tracking.close()
    common.say(f"best agent {result.best_agent}: return {result.best_return:.1f} in the last round; wrote {args.out}")
    return 0



def dry_run(args, cfg) -> int:
    """Plan the PBT run: compile its calls, print their cost and an accelerator estimate; train and write nothing."""
    from metadisco.parallel import cost, devices
    from metadisco.search.pbt.run import PBT

    acc = common.dry_run_accelerator(args)
    used = devices.select(args.devices)
    common.say("dry run: compiling the initial population and one round; nothing is trained or written")
    pbt = PBT(cfg, used)
    for line in cost.render_plan(pbt.plan(), acc, len(pbt.devices), "whole run",
                                 "time here not measured; exploit / explore on the host not included"):
        print(line)
    return 0
