"""metadisco meta-train: evolve an objective with an evosax strategy; see metadisco.meta."""

from __future__ import annotations

from metadisco.cli.common import add_set_option, say
from metadisco.errors import UserError


def add_parser(sub, name):
    p = sub.add_parser(name, help="meta-train an objective by evolution (config: a YAML file, see experiments/)")
    p.add_argument("config", metavar="CONFIG.yaml", help="meta-training config (see experiments/quickstart.yaml)")
    add_set_option(p)
    p.add_argument("--out", required=True, help="run directory (new or empty, or an existing run with --resume)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    p.add_argument("--distributed", action="store_true",
                   help="call jax.distributed.initialize() first (several hosts; also implied by "
                        "JAX_COORDINATOR_ADDRESS and JAX_NUM_PROCESSES)")
    p.set_defaults(run=run)


def run(args) -> int:
    from metadisco.meta import distributed as dist

    distributed = args.distributed or dist.wants_distributed()
    if distributed:
        if args.devices is not None:
            raise UserError("--devices selects devices of one process; a multi-process run uses every device "
                            "of every process")
        dist.initialize()  # before anything touches a device

    import jax

    from metadisco import devices
    from metadisco.meta.config import load_config
    from metadisco.meta.loop import MetaRun

    config = load_config(args.config, args.overrides)
    mesh = dist.make_mesh(devices.select(args.devices)) if args.devices is not None else None
    meta_run = MetaRun(config, args.out, resume=args.resume, mesh=mesh)
    if dist.is_writer():
        say(f"meta-training {config.strategy.name} (population {config.strategy.population_size}) on "
            f"{', '.join(t.env for t in config.tasks)} for {config.generations} generations over "
            f"{meta_run.mesh.devices.size} device(s) in {jax.process_count()} process(es); writing {args.out}")
    result = meta_run.run()
    if dist.is_writer():
        def fmt(v):
            return "n/a" if v is None else f"{v:.4g}"

        say(f"ES mean on fresh seeds: {fmt(result.fitness_of_initial_mean)} at generation 0 -> "
            f"{fmt(result.fitness_of_final_mean)} after {result.generations_done}; objective in "
            f"{args.out}/objective.msgpack, metrics in {args.out}/metrics.jsonl")
    return 0
