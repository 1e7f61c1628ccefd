"""metadisco evaluate: train an objective and baselines on held-out envs with the same seeds; write statistics,
tables and figures (DIR/eval.json, DIR/eval.md, DIR/curves_<env>.png, DIR/aggregate.png)."""

from __future__ import annotations

from metadisco.cli.common import (
    MAX_TIMESTEPS,
    add_baseline_cache_option,
    add_distributed_option,
    add_dry_run_options,
    add_set_option,
    comma_separated,
    dry_run_accelerator,
    positive_int,
    progress_lines,
    say,
    seed_int,
    show_progress,
    use_baseline_cache,
)

# `metadisco.evaluate.rules`' SCORES and TUNE_RULES (not imported: building the parser must not import JAX;
# tests/evaluate/test_tuning.py checks they agree).
SCORE_CHOICES = ("final_return", "mean_return", "eval_return")
TUNE_RULE_CHOICES = ("fresh_seeds", "same_seeds")


def add_parser(sub, name):
    p = sub.add_parser(name, help="evaluate an objective against baselines on held-out envs, with statistics")
    p.add_argument("objective", metavar="OBJECTIVE",
                   help="built-in name (ppo, dpo), an objective file, or a meta-training run directory "
                        "(then --envs defaults to its held_out_envs); LABEL=SOURCE names it in tables")
    p.add_argument("--envs", type=comma_separated, default=None,
                   help="comma-separated env ids (see `metadisco envs`); ID@TIMESTEPS gives one env its own budget")
    p.add_argument("--seeds", type=positive_int("--seeds"), default=8, help="seeds per method and env (default 8)")
    p.add_argument("--timesteps", type=positive_int("--timesteps", MAX_TIMESTEPS), default=None,
                   help="env steps per seed (default: each env's preset)")
    p.add_argument("--baselines", type=comma_separated, default=None,
                   help="comma-separated built-in names (ppo, dpo, pqn) or objective files, each optionally "
                        "LABEL=SOURCE to name it in tables (default: ppo, or pqn for a TD objective)")
    p.add_argument("--preset", default=None, help="trainer preset for every env (default: chosen per env id)")
    p.add_argument("--seed", type=seed_int("--seed"), default=0, help="base seed; the seed keys are split from it")
    p.add_argument("--score", choices=SCORE_CHOICES, default="final_return",
                   help="what the statistics rank: the final return (default), mean_return (the area under the "
                        "learning curve) or eval_return (deterministic episodes of the trained agent's mode, "
                        "DiscoBench's and OPEN's score); P(improvement) is reported on every score recorded")
    p.add_argument("--eval-episodes", type=positive_int("--eval-episodes"), default=None, metavar="N",
                   help="deterministic episodes each trained agent plays, recorded as eval_return beside the "
                        "training scores (default: none, or DiscoBench's 16 with --score eval_return)")
    p.add_argument("--tune", action="append", default=[], metavar="SETTING=V1,V2,...",
                   help="tune a traced setting over a grid for every method, baselines included, and report each "
                        "at its own best point beside its untuned figures (repeatable: the grid is the product), "
                        "e.g. --tune lr=1e-3,2.5e-3,5e-3,1e-2")
    p.add_argument("--tune-rule", choices=TUNE_RULE_CHOICES, default="fresh_seeds",
                   help="fresh_seeds (default): choose each method's point on selection seeds, report it on fresh "
                        "ones; same_seeds: choose and report on the same seeds, as DiscoBench does")
    p.add_argument("--resume", action="store_true",
                   help="finish the evaluation whose cells --out holds: only missing cells are trained, and the "
                        "files written are those an uninterrupted run writes")
    add_set_option(p)
    p.add_argument("--out", default=None, help="output directory (not needed with --dry-run)")
    add_baseline_cache_option(p)
    add_dry_run_options(p)
    add_distributed_option(p)
    p.set_defaults(run=run)


def rules_of(args):
    """The evaluation's `Rules` from the command line."""
    from metadisco.evaluate.rules import Rules, parse_tune

    return Rules(args.score, args.eval_episodes or 0, tuple(parse_tune(t) for t in args.tune), args.tune_rule)


def training_of(args):
    """What every method trains with (`metadisco.evaluate.Training`) from the command line."""
    from metadisco.evaluate.training import Training

    return Training(args.timesteps, tuple(args.overrides), args.preset)


def run(args) -> int:
    use_baseline_cache(args)
    from metadisco.core.errors import UserError
    from metadisco.evaluate import evaluate
    from metadisco.evaluate.summary import nothing_scored, return_text
    from metadisco.parallel import devices

    if args.dry_run:
        return dry_run(args)
    if args.out is None:
        raise UserError("give --out DIR, or --dry-run to plan the evaluation without one")
    say_unlike_training(args, rules_of(args))
    report, _ = evaluate(args.objective, args.envs, args.baselines, args.seeds, args.out,
                         training=training_of(args), rules=rules_of(args), seed=args.seed, resume=args.resume,
                         devices=devices.select(args.devices), show_progress=show_progress(args),
                         call_lines=progress_lines(args))
    settings = report["settings"]
    for env, entries in report["envs"].items():
        cells = []
        for label in settings["methods"]:
            entry = entries[label]
            cells.append(f"{label} IQM {return_text(entry['iqm'])} ({entry['finite_seeds']}/{entry['seeds']} seeds)")
        say(f"{env}: " + ", ".join(cells))
    for score, blocks in report["aggregate"]["probability_of_improvement_by_score"].items():
        for name, block in blocks.items():
            ci = block["ci95"]
            ci_text = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
            say(f"P({name}) on {score} = {block['p']:.2f}{ci_text}")
    if "tuning" in settings:
        for env, entries in report["envs"].items():
            chosen = ", ".join(f"{label} {_point(entries[label]['tuning']['chosen'])}"
                               for label in settings["methods"])
            say(f"{env}: tuned ({settings['tuning']['rule']}): {chosen}")
            if unscored := [label for label in settings["methods"] if nothing_scored(entries[label]["tuning"])]:
                say(f"{env}: no grid point scored a finite {settings['score']} for {', '.join(unscored)} on the "
                    f"selection seeds, so their chosen point is the grid's first, not a choice; judge this env "
                    f"by another --score (eval_return with --eval-episodes) or with more steps")
        for name, block in report["aggregate"]["untuned_probability_of_improvement"].items():
            ci = block["ci95"]
            ci_text = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
            say(f"untuned: P({name}) on {settings['score']} = {block['p']:.2f}{ci_text}")
    say(f"wrote {args.out}/eval.json, eval.md and figures")  # say: process 0 only
    return 0


def _point(point: dict) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in point.items())


def say_unlike_training(args, rules, methods=None, configs=None) -> None:
    """One line where a meta-training run directory's objective is evaluated with other settings than every one of
    its tasks gave it (`metadisco.evaluate.unlike_training`): judging it so is allowed, but should be chosen."""
    from metadisco.evaluate import prepare, unlike_training

    if methods is None:
        methods, _, configs = prepare(args.objective, args.envs, args.baselines, args.seeds,
                                      training=training_of(args), seed=args.seed, rules=rules)
    found = unlike_training(args.objective, configs, methods[0].objective.algorithm, tuple(k for k, _ in rules.tune))
    if found:
        def plain(v):
            return ",".join(map(str, v)) if isinstance(v, tuple) else str(v)

        parts = ", ".join(f"{k}={plain(v)} (here {' / '.join(dict.fromkeys(plain(x) for x in other.values()))})"
                          for k, (v, other) in found.items())
        say(f"{methods[0].label} was meta-trained with {parts}; judge it as it trained with "
            + " ".join(f"--set {k}={plain(v)}" for k, (v, _) in found.items()))


def dry_run(args) -> int:
    """Plan the evaluation (`metadisco.evaluate.plan`): compile each call, print its cost; train and write nothing."""
    from metadisco.evaluate import prepare
    from metadisco.evaluate.plan import plan_evaluation, render
    from metadisco.parallel import devices

    acc = dry_run_accelerator(args)
    rules = rules_of(args)
    methods, envs, configs = prepare(args.objective, args.envs, args.baselines, args.seeds,
                                     training=training_of(args), seed=args.seed, rules=rules)
    say_unlike_training(args, rules, methods, configs)
    used = devices.select(args.devices)
    say(f"dry run: compiling the calls of {len(methods)} method(s) on {len(envs)} env(s); nothing is trained or "
        "written")
    for line in render(plan_evaluation(methods, envs, configs, args.seeds, args.seed, used, rules), acc, len(used)):
        print(line)
    return 0
