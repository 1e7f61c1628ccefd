"""metadisco probe: will this meta-training config learn? Fitness noise and the ES gradient's SNR, before the run."""

from __future__ import annotations

import math

from metadisco.cli import common


def add_parser(sub, name):
    p = sub.add_parser(name, help="measure fitness noise and the ES gradient's signal-to-noise ratio of a config")
    common.add_config_options(p, "meta-training config (see experiments/)",
                              "the ES's draws and the seed keys (default: the config's `seed`)")
    p.add_argument("--repeats", type=common.positive_int("--repeats"), default=4,
                   help="blocks of the config's seeds per member (default 4: 4 x seeds runs of each member)")
    common.add_baseline_cache_option(p)
    p.add_argument("--out", default=None, help="also write the figures as JSON to this file; each finished block is "
                                               "kept in FILE.cells/ as it finishes")
    p.add_argument("--resume", action="store_true",
                   help="finish the probe whose blocks FILE.cells/ holds (only missing blocks train; the report is "
                        "the one an uninterrupted probe writes); needs --out")
    common.add_distributed_option(p)
    p.set_defaults(run=run)


def _fmt(value, spec=".3g") -> str:
    return "-" if value is None else format(value, spec)


def run(args) -> int:
    common.use_baseline_cache(args)
    import json

    from tqdm import tqdm

    from metadisco.core.io import atomic_write_text, to_jsonable
    from metadisco.meta.horizon import horizon_note
    from metadisco.meta.load import load_config
    from metadisco.meta.probe import probe
    from metadisco.meta.step import GenerationStep
    from metadisco.trainers.algorithm import baseline_of

    config = load_config(args.config, common.seed_override(args))
    meta_run = GenerationStep(config)
    common.say(f"probing {config.strategy.name} (population {config.strategy.population_size}) on "
               f"{len(meta_run.problem.tasks)} task(s) x {args.repeats} blocks of seeds (compiling first)")
    if note := horizon_note(config):
        common.say(note)
    store = None
    if args.out:
        from pathlib import Path

        from metadisco.core.cells import CellStore
        from metadisco.core.io import check_output_file

        check_output_file(args.out)
        settings = {"config": config.to_dict(), "repeats": args.repeats, "devices": int(meta_run.mesh.devices.size)}
        store = CellStore(Path(f"{args.out}.cells"), settings, args.resume, "probe", write=common.is_writer(),
                          output=args.out)
    elif args.resume:
        from metadisco.core.errors import UserError

        raise UserError("--resume finishes the probe whose blocks FILE.cells/ holds; give --out FILE")
    with tqdm(total=len(meta_run.problem.tasks) * args.repeats, desc="probe", unit="call", dynamic_ncols=True,
              disable=not common.show_progress(args)) as bar:
        report = probe(meta_run, args.repeats, bar, store)
    if not common.is_writer():  # another process of a multi-process run: process 0 writes and prints the table
        return 0
    if args.out:
        atomic_write_text(args.out, json.dumps(to_jsonable(report), indent=2) + "\n")
    # The control every member is paired with: the objective at zero meta-parameters (PPO unless it says otherwise).
    baseline = baseline_of(config.objective)
    baseline = baseline if len(baseline) <= 4 else "baseline"
    header = (f"{'task':32s} {'seeds':>5s} {baseline.lower():>9s} {'random':>9s} {'seed std':>9s} {'member std':>10s} "
              f"{'pair SNR':>8s} {'signal':>6s} {'split-half':>10s} {'seeds for SNR 1':>15s}")
    print(header)
    rows = [*report["tasks"].items(), (f"combined ({baseline}-normalised)", report["combined"])]
    for name, t in rows:
        print(f"{name:32s} {_fmt(t.get('seeds'), 'd'):>5s} {_fmt(_baseline(t)):>9s} {_fmt(t.get('random')):>9s} "
              f"{_fmt(t.get('seed_std')):>9s} {_fmt(t.get('member_std')):>10s} {_fmt(t.get('pair_snr')):>8s} "
              f"{_fmt(t.get('signal_fraction'), '.2f'):>6s} {_fmt(t.get('split_half_reliability'), '.2f'):>10s} "
              f"{_fmt(t.get('seeds_for_snr_1'), 'd'):>15s}")
    for line in unscored_notes(report):
        print(line)
    print(f"verdict: {report['verdict']} (signal fraction {_fmt(report['combined'].get('signal_fraction'), '.2f')}, "
          f"{report['effective_pairs']:.1f} of {config.strategy.population_size // 2} pairs effective); "
          f"{report['advice']}")
    return 0


def _baseline(task: dict):
    """A task's baseline score: "baseline", or "ppo" in an older probe report."""
    return task.get("baseline", task.get("ppo"))


def unscored_notes(report: dict) -> list[str]:
    """One line per task the probe could not score: PPO has no final return on any seed (its row is NaN), or too
    few seeds have a final return for every probed member to give pair statistics (its SNR columns read "-")."""
    # A run's final return is NaN both when it diverged and when it finished no episode (diverged_runs counts
    # both), so the notes name both causes.
    cause = "no episode ended, or the runs diverged"
    notes = []
    for name, t in report["tasks"].items():
        if _baseline(t) is None or not math.isfinite(_baseline(t)):
            notes.append(f"note: {name}: PPO has no final return on any seed ({cause}): a longer budget, or a "
                         f"lower learning rate, scores it")
        elif "pair_snr" not in t and "scored_seeds" in t:
            notes.append(f"note: {name}: only {t['scored_seeds']} of {t['seeds']} seeds have a final return for "
                         f"every probed member ({cause}; {t['diverged_runs']} runs without one), too few for pair "
                         f"statistics: a longer budget, or a lower learning rate, scores it")
    return notes
