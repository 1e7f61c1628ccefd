"""metadisco plot: PNG figures of each piece of an objective, beside PPO's / DPO's, L2 and Adam; with --env, also
training runs of the objective's optimiser and of Adam on the same seeds, and their dormant-unit fractions. A
learned update rule (with --env) is drawn on the trajectories of one agent it trains: its policy and prediction
targets against actor-critic's advantage and return (`metadisco.analysis.update_rule_figures`). Given
an evaluation's folder (`metadisco evaluate --out DIR`), its learning curves and aggregate again, from eval.json."""

from __future__ import annotations

from metadisco.cli.common import MAX_TIMESTEPS, add_set_option, output_dir, positive_int, say


def add_parser(sub, name):
    p = sub.add_parser(name, help="draw an objective's drift, value loss and optimiser beside the handcrafted ones")
    p.add_argument("objective", metavar="OBJECTIVE",
                   help="built-in name (ppo, dpo), objective file, meta-training run directory, or an evaluation's "
                        "folder (its figures are drawn again from its eval.json)")
    p.add_argument("--num-updates", type=positive_int("--num-updates"), default=1000,
                   help="training horizon N shown to progress-aware drifts (TA-LPO), default 1000")
    p.add_argument("--out", required=True, help="output directory for the PNG files")
    p.add_argument("--env", default=None,
                   help="also train the objective and the same objective with Adam on this env (PPO, its preset) "
                        "and draw each one's dormant-unit fraction per update (dormancy.png); off by default")
    p.add_argument("--timesteps", type=positive_int("--timesteps", MAX_TIMESTEPS), default=None,
                   help="with --env: env steps per seed (default: the preset's)")
    p.add_argument("--seeds", type=positive_int("--seeds"), default=4,
                   help="with --env: seeds per optimiser, the same keys for both (default 4)")
    add_set_option(p, "with --env and a learned update rule: a change to the agent's training settings (its "
                      "update_rule preset), e.g. --set num_envs=8 --set replay_capacity=8 --set replay_batch=8")
    p.set_defaults(run=run)


def run(args) -> int:
    from pathlib import Path

    if (Path(args.objective) / "eval.json").is_file():
        return _redraw_evaluation(Path(args.objective), args)
    from metadisco.analysis.inputs import resolve_input
    from metadisco.analysis.objective_figures import plot_objective

    objective, meta, label, run_dir = resolve_input(args.objective)
    if objective.update_rule is not None:
        return _plot_update_rule(objective, meta, label, args)
    if args.overrides:
        from metadisco.core.errors import UserError

        raise UserError("--set changes the training run a learned update rule is drawn on; this objective has none")
    dormancy = _dormancy_request(args, objective)
    out = output_dir(args.out, lock=False)  # plot only reads the run, and never waits for its writer
    paths = plot_objective(objective, meta, label, out, run_dir, float(args.num_updates), dormancy)
    for path in paths:
        print(path)
    say(f"wrote {len(paths)} figures to {out}")
    return 0


def _plot_update_rule(objective, meta, label, args) -> int:
    """A learned update rule's figure: its targets on the batches of an agent it trains on --env."""
    from metadisco.analysis.update_rule_figures import plot_update_rule
    from metadisco.core.errors import UserError
    from metadisco.envs import check_env_id

    if args.env is None:
        raise UserError("a learned update rule is drawn on the trajectories of an agent it trains: give --env ENV "
                        "(e.g. Catch-bsuite; --timesteps sets the run's length)")
    check_env_id(args.env)
    out = output_dir(args.out, lock=False)
    say(f"training one agent with {label} on {args.env} to draw what its rule asks (compiling first)")
    paths = plot_update_rule(objective, meta, label, out, args.env, args.timesteps, overrides=args.overrides)
    for path in paths:
        print(path)
    say(f"wrote {len(paths)} figure(s) to {out}")
    return 0


def _dormancy_request(args, objective) -> dict | None:
    """--env / --timesteps / --seeds as `plot_objective`'s `dormancy`, checked before anything is drawn."""
    from metadisco.core.errors import UserError

    if args.env is None:
        if args.timesteps is not None:
            raise UserError("--timesteps sets the length of --env's training runs: add --env ENV")
        return None
    from metadisco.envs import check_env_id
    from metadisco.trainers.algorithm import get_algorithm

    if not get_algorithm(objective.algorithm).gives_activations:
        raise UserError(f"--env reads the optimiser's view of the network's activations, which algorithm "
                        f"{objective.algorithm}'s trainer does not give: plot it without --env")
    return {"env_id": check_env_id(args.env), "timesteps": args.timesteps, "seeds": args.seeds}


def _redraw_evaluation(folder, args) -> int:
    """An evaluation folder's figures from its eval.json (a damaged file is a one-line error)."""
    from metadisco.core.errors import UserError
    from metadisco.evaluate.layout import read_report
    from metadisco.figures.eval_curves import redraw

    if args.env is not None:
        raise UserError("--env trains an objective; an evaluation's folder is only drawn again: drop --env")
    try:
        report = read_report(folder / "eval.json")
    except UserError as e:
        raise UserError(f"{e}; give the --out folder of `metadisco evaluate`") from None
    out = output_dir(args.out, lock=False)
    paths = redraw(report, out)
    for path in paths:
        print(path)
    say(f"drew {len(paths)} figures of {folder} into {out}")
    return 0
