"""metadisco meta-train: evolve an objective with an evosax strategy; see metadisco.meta."""

from __future__ import annotations

from metadisco.cli import common
from metadisco.core.errors import DiskFullError, UserError


def gain(initial: float, final: float) -> str:
    """`final - initial`, and as a percentage of `initial` when that is above zero: a percentage of a start at or
    below zero (a return that starts negative, as an update rule's can) says nothing."""
    return f"{final - initial:+.4g}" + (f" ({(final - initial) / initial:+.1%})" if initial > 0 else "")


def add_parser(sub, name):
    p = sub.add_parser(name, help="meta-train an objective by evolution (config: a YAML file, see experiments/)")
    common.add_config_options(p, "meta-training config (see experiments/quickstart.yaml)",
                              "the ES's draws and every member's seed keys (default: the config's `seed`)")
    p.add_argument("--out", default=None,
                   help="run directory (new or empty, or an existing run with --resume); not needed with --dry-run")
    common.add_baseline_cache_option(p)
    common.add_dry_run_options(p)
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    common.add_distributed_option(p)
    common.add_track_option(p)
    p.set_defaults(run=run)


def run(args) -> int:
    common.use_baseline_cache(args)
    import jax

    from metadisco.meta.horizon import horizon_note
    from metadisco.meta.load import load_config
    from metadisco.meta.loop import run_meta_training
    from metadisco.meta.step import GenerationStep
    from metadisco.parallel import devices, hosts
    from metadisco.parallel.sharding import make_mesh
    from metadisco.runs.rundir import RunDir
    from metadisco.trainers.algorithm import baseline_of, describe_baseline

    config = load_config(args.config, common.seed_override(args))
    if args.dry_run:
        return dry_run(args, config)
    if args.out is None:
        raise UserError("give --out DIR (the run directory), or --dry-run to plan the run without one")
    tracking = common.open_tracking(args, args.out, config.to_dict())  # --track checked before any work
    run_dir = RunDir(args.out, writer=hosts.is_writer())
    run_dir.check_before_run(args.resume)
    mesh = make_mesh(devices.select(args.devices)) if args.devices is not None else None
    step = GenerationStep(config, mesh)
    if hosts.is_writer():
        common.say(f"meta-training {config.strategy.name} (population {config.strategy.population_size}) on "
                   f"{', '.join(t.env for t in config.tasks)} for {config.generations} generations over "
                   f"{step.devices} device(s) in {jax.process_count()} process(es); writing {args.out}")
        if note := horizon_note(config):
            common.say(note)
    try:
        result = run_meta_training(step, run_dir, resume=args.resume, progress=common.show_progress(args), notes=True,
                                   callbacks=[tracking] if tracking is not None else [])
    except DiskFullError as e:
        raise UserError(f"{e}; {run_dir.disk_full_advice()}") from None
    if hosts.is_writer():
        def fmt(v):
            return "n/a" if v is None else f"{v:.4g}"

        baseline = step.problem.control_name  # paired fitness is relative to it: PPO unless the objective says
        unit = f" ({baseline}-normalised: {baseline} = 1)" if config.normalise == "paired" else ""
        common.say(f"ES mean on fresh seeds{unit}: {fmt(result.fitness_of_initial_mean)} at generation 0 -> "
                   f"{fmt(result.fitness_of_final_mean)} after {result.generations_done}; objective in "
                   f"{args.out}/objective.msgpack, metrics in {args.out}/metrics.jsonl")
        initial, final = result.fitness_of_initial_mean, result.fitness_of_final_mean
        tasks = ", ".join(dict.fromkeys(t.env for t in config.tasks))
        if initial is not None and final is not None:
            zero = describe_baseline(config.objective)
            what = (f"the ES's start, no handcrafted method (the control is {baseline})" if zero == "none"
                    else f"which is {zero} exactly")
            common.say(f"gain on fresh seeds of {tasks}: {gain(initial, final)} over generation 0's ES mean, "
                       f"{what} ({config.fitness.score})")
        held = ", ".join(config.held_out_envs)
        baselines = evaluation_baselines(config.objective)
        common.say(f"not shown by this run: transfer. It trained and scored on {tasks} only"
                   + (f"; its held-out envs ({held}) are untested until `metadisco evaluate {args.out} "
                      f"--baselines {baselines} --out {args.out}/eval`" if held else ""))
        if config.validation.tasks and result.best_generation is None:
            common.say("found: nothing; no validation ever gave a finite score, so no objective was kept (no "
                       "objective_best.msgpack); evaluate / plot / distil use the final ES mean, objective.msgpack. "
                       "Give the validation tasks enough timesteps for episodes to end in the final window")
        if result.best_generation is not None:
            found = ("nothing beat the ES's start on the validation envs, so the kept objective is generation 0's"
                     if result.best_generation == 0 and baseline_of(config.objective) == "none" else
                     f"nothing beat {baseline} on the validation envs, so the kept objective is {baseline} itself"
                     if result.best_generation == 0 else
                     f"the kept objective (generation {result.best_generation}) scores {fmt(result.best_validation)} "
                     f"on the validation envs and {fmt(result.fitness_of_best)} on fresh seeds of the training tasks")
            common.say(f"found: {found} ({baseline} = 1); it is {args.out}/objective_best.msgpack, which evaluate / "
                       f"plot / distil use for {args.out}; next: metadisco evaluate {args.out} --baselines "
                       f"{baselines} --out {args.out}/eval")
    return 0


def dry_run(args, config) -> int:
    """Plan the run (`metadisco.meta.plan`): compile, call each program once, print; write nothing."""
    from metadisco.meta.plan import plan, render
    from metadisco.meta.step import GenerationStep
    from metadisco.parallel import devices
    from metadisco.parallel.sharding import make_mesh

    if args.resume:
        raise UserError("--dry-run plans a new run; leave out --resume")
    acc = common.dry_run_accelerator(args)
    mesh = make_mesh(devices.select(args.devices)) if args.devices is not None else None
    step = GenerationStep(config, mesh)
    programs = len(step.problem.tasks) + len(step.problem.valid_tasks)
    common.say(f"dry run: compiling {programs} program(s) of {config.strategy.name} "
               f"(population {config.strategy.population_size}) over {step.devices} device(s) and calling each once; "
               "nothing is written")
    for line in render(plan(step), acc):
        print(line)
    return 0


def evaluation_baselines(objective) -> str:
    """The baselines the closing lines suggest judging against (`Algorithm.baselines`: PPO and DPO for a PPO
    objective, else the algorithm's handcrafted control)."""
    from metadisco.trainers.algorithm import get_algorithm

    return ",".join(get_algorithm(objective.algorithm).baselines())
