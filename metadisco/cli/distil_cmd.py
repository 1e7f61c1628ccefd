"""metadisco distil: fit a closed form (PPO / DPO family, or symbolic regression) to an objective's drift, or a
learned TD loss to DQNReg's family, and write it as an objective file."""

from __future__ import annotations

from metadisco.cli.common import (
    MAX_TIMESTEPS,
    add_renamed_option,
    add_set_option,
    output_dir,
    positive_int,
    say,
    seed_int,
)

# The fit grid holds points**2 values per array; 4001**2 float64s is 128 MB, already far finer than needed.
MAX_POINTS = 4001
# gplearn keeps every program of a generation in memory: a million is beyond any laptop's patience already.
MAX_PROGRAMS = 1_000_000


def add_parser(sub, name):
    p = sub.add_parser(name, help="distil a drift (or a learned TD loss) into a closed form; write distilled.json and "
                                  "distilled.msgpack")
    p.add_argument("objective", metavar="OBJECTIVE",
                   help="built-in name (ppo, dpo), objective file, or meta-training run directory")
    p.add_argument("--method", choices=("parametric", "symbolic"), default="parametric")
    p.add_argument("--grid", choices=("log", "linear"), default="log",
                   help="fit over r = exp([-2, 2]) (log; Goldie et al. 2025) or r in [0.5, 1.5] (linear); A in [-8, 8]")
    p.add_argument("--points", type=positive_int("--points", MAX_POINTS), default=41,
                   help=f"grid points per axis (41, at most {MAX_POINTS})")
    p.add_argument("--weighted-by-env", metavar="ENV", default=None,
                   help="weight the fit by where (r, A) fall while training this objective on ENV (short run)")
    p.add_argument("--collect-timesteps", type=positive_int("--collect-timesteps", MAX_TIMESTEPS), default=32_768,
                   help="env steps of that short run (default 32768)")
    # Not --progress: that dest is the global --no-progress's, which then set this to False, i.e. 0.
    p.add_argument("--at-progress", type=float, default=0.0, metavar="P",
                   help="the training progress n/N at which to take a TA-LPO drift, in [0, 1] (0)")
    add_renamed_option(p, "--progress", "--at-progress", "--progress is the global option's, --no-progress")
    p.add_argument("--population", type=positive_int("--population", MAX_PROGRAMS), default=1000,
                   help="symbolic: programs")
    p.add_argument("--generations", type=positive_int("--generations", MAX_PROGRAMS), default=15,
                   help="symbolic: generations")
    p.add_argument("--seed", type=seed_int("--seed"), default=0, help="symbolic: gplearn's seed (0 <= seed < 2**32)")
    add_renamed_option(p, "--random-state", "--seed", "every seeded command's name for it")
    p.add_argument("--log-r", action="store_true", help="symbolic: also offer log r as a variable")
    p.add_argument("--evaluate-on", metavar="ENV", default=None,
                   help="train original and distilled with the same seeds on ENV; report retained performance")
    p.add_argument("--seeds", type=positive_int("--seeds"), default=4, help="seeds for --evaluate-on (4)")
    p.add_argument("--timesteps", type=positive_int("--timesteps", MAX_TIMESTEPS), default=None,
                   help="env steps per seed for --evaluate-on (default: the preset's)")
    add_set_option(p)
    p.add_argument("--out", required=True, help="output directory")
    p.set_defaults(run=run)


def run(args) -> int:
    from metadisco.analysis.distil import distil, grid_target, histogram_target, write_distilled
    from metadisco.analysis.inputs import resolve_input
    from metadisco.core.errors import UserError
    from metadisco.evaluate.methods import run_objective_file

    if not 0.0 <= args.at_progress <= 1.0:
        raise UserError(f"--at-progress must be in [0, 1], got {args.at_progress}")
    if args.points < 5:
        raise UserError(f"--points must be at least 5, got {args.points}")
    # Everything the user typed is checked before the first (long) step, and --out before any writing.
    from metadisco.core.limits import check_trainer_fits
    from metadisco.runs.seeds import resolve_config

    objective, meta, label, run_dir = resolve_input(args.objective)
    if args.weighted_by_env:
        resolve_config(args.weighted_by_env, None, args.overrides, args.collect_timesteps, objective.algorithm)
    if args.evaluate_on:
        check_trainer_fits(resolve_config(args.evaluate_on, None, args.overrides, args.timesteps, objective.algorithm),
                           args.seeds, f"--seeds {args.seeds:,}")
    from metadisco.trainers.algorithm import get_algorithm

    td_loss = objective.value_loss.name == "learned_td"
    if td_loss and (args.method != "parametric" or args.weighted_by_env):
        raise UserError("a learned TD loss distils into DQNReg's family by least squares: drop --method symbolic "
                        "and --weighted-by-env")
    if not td_loss and "drift" not in get_algorithm(objective.algorithm).slots:
        raise UserError(f"{label} is for algorithm {objective.algorithm}, whose trainer never calls the drift, so "
                        "there is no drift to distil (a learned_td value loss would be); `metadisco plot` draws its "
                        "other pieces")
    source = str(run_objective_file(run_dir)) if run_dir else args.objective
    out = output_dir(args.out)
    if td_loss:
        from metadisco.analysis.distil import distil_td_loss, write_distilled_td

        result = write_distilled_td(out, objective, meta, distil_td_loss(objective, meta, args.at_progress,
                                                                         args.points), source)
        say(f"{result['method']}: {result['readable']}  (R² {result['r2']:.5f}); DQNReg weight "
            f"{result['dqn_reg_weight']:.4g}")
        return _evaluate_and_finish(args, out, objective, meta, result)
    if args.weighted_by_env:
        from metadisco.analysis.collect import collect_histogram

        say(f"collecting (r, A) from {args.collect_timesteps} steps of {label} on {args.weighted_by_env}")
        histogram = collect_histogram(args.weighted_by_env, objective, meta, args.collect_timesteps, args.overrides)
        target = histogram_target(objective, meta, histogram, args.weighted_by_env, args.at_progress)
        say(f"  {histogram.total} samples, {100 * histogram.coverage:.1f}% inside the histogram")
    else:
        target = grid_target(objective, meta, args.grid, args.points, args.at_progress)
    options = None
    if args.method == "symbolic":
        options = {"population": args.population, "generations": args.generations,
                   "random_state": args.seed, "features": ("x", "A", "log_r") if args.log_r else ("x", "A")}
        say(f"symbolic regression: {args.population} programs x {args.generations} generations")
    result = distil(target, args.method, options)
    result = write_distilled(out, objective, meta, result, source)
    say(f"{result['method']}: {result['readable']}  (R² {result['r2']:.5f})")
    return _evaluate_and_finish(args, out, objective, meta, result)


def _evaluate_and_finish(args, out, objective, meta, result: dict) -> int:
    """With --evaluate-on, train the original and the distilled objective on the same seeds; say where it wrote."""
    from metadisco.analysis.distil import retained_performance
    from metadisco.core.io import write_json

    if args.evaluate_on:
        from metadisco.objectives.resolve import resolve_objective

        distilled = resolve_objective(str(out / "distilled.msgpack"))
        say(f"evaluating original and distilled on {args.evaluate_on}, {args.seeds} seeds")
        result["evaluation"] = retained_performance(args.evaluate_on, (objective, meta), distilled, args.seeds,
                                                    args.timesteps, args.overrides)
        write_json(out / "distilled.json", result)
        ev = result["evaluation"]
        say(f"  original {ev['original']['mean']}, distilled {ev['distilled']['mean']}, retained {ev['retained']}")
    say(f"wrote {out / 'distilled.json'} and {out / 'distilled.msgpack'}")
    return 0
