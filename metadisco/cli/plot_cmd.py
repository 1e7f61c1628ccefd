"""metadisco plot: PNG figures of each piece of an objective, beside PPO's / DPO's, L2 and Adam."""

from __future__ import annotations

from metadisco.cli.common import output_dir, positive_int, say


def add_parser(sub, name):
    p = sub.add_parser(name, help="draw an objective's drift, value loss and optimiser beside the handcrafted ones")
    p.add_argument("objective", metavar="OBJECTIVE",
                   help="built-in name (ppo, dpo), objective file, or meta-training run directory")
    p.add_argument("--num-updates", type=positive_int("--num-updates"), default=1000,
                   help="training horizon N shown to progress-aware drifts (TA-LPO), default 1000")
    p.add_argument("--out", required=True, help="output directory for the PNG files")
    p.set_defaults(run=run)


def run(args) -> int:
    from metadisco.analysis.inputs import resolve_input
    from metadisco.analysis.objective_figures import plot_objective

    objective, meta, label, run_dir = resolve_input(args.objective)
    out = output_dir(args.out, lock=False)  # plot only reads the run, and never waits for its writer
    paths = plot_objective(objective, meta, label, out, run_dir, float(args.num_updates))
    for path in paths:
        print(path)
    say(f"wrote {len(paths)} figures to {out}")
    return 0
