"""metadisco leaderboard: judge every entry of a suite by one protocol (cells, resumable), or place your objective on
a committed board (`--add mine=FILE --against DIR`): DIR/board.json, board.md and three figures."""

from __future__ import annotations

from metadisco.cli.common import comma_separated, say


def add_parser(sub, name):
    p = sub.add_parser(name, help="a leaderboard of RL algorithms, published and discovered, on one suite")
    p.add_argument("--suite", required=True, metavar="NAME|FILE",
                   help="a shipped suite (cpu, gpu) or a suite file (see metadisco/leaderboard/suites/)")
    p.add_argument("--out", default=None, help="the board's directory: its cells, board.json, board.md, figures")
    p.add_argument("--add", action="append", default=[], metavar="LABEL=SOURCE",
                   help="add an objective (a file, run directory, built-in or catalogue:NAME) as an entry "
                        "(repeatable); with --against, only the added entries train")
    p.add_argument("--against", default=None, metavar="DIR",
                   help="a board of the same suite whose cells stand for its entries (read, never written)")
    p.add_argument("--entries", type=comma_separated, default=None, metavar="NAME,...",
                   help="train only these entries now (the board lists every entry; default: all)")
    p.add_argument("--versus", type=comma_separated, default=[], metavar="NAME,...",
                   help="also print, per env, P(entry > NAME) with a 95%% CI for every entry (on the suite's score "
                        "and on greedy episodes), e.g. --versus dqn,dqn_reg")
    p.add_argument("--dry-run", action="store_true",
                   help="print each entry's cells done and left, their env steps and the seconds the done cells "
                        "took; nothing is trained or written")
    p.set_defaults(run=run)


def run(args) -> int:
    from pathlib import Path

    from metadisco.core.errors import UserError
    from metadisco.leaderboard import Board, load_suite, suite_entries
    from metadisco.leaderboard.board import print_line
    from metadisco.leaderboard.render import rank_lines, write_board
    from metadisco.parallel import devices

    suite = load_suite(args.suite)
    entries = suite_entries(suite.entries, args.add)
    names = [e.name for e in entries]
    only = args.entries
    if only is not None:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise UserError(f"--entries: {unknown[0]!r} is not an entry of suite {suite.name} "
                            f"({', '.join(names)})")
    unknown = [n for n in args.versus if n not in names]
    if unknown:
        raise UserError(f"--versus: {unknown[0]!r} is not an entry of suite {suite.name} ({', '.join(names)})")
    if args.against is not None:
        if not args.add:
            raise UserError("--against places added entries on another board: give --add LABEL=SOURCE too")
        only = [n for n in names if n in {e.name for e in entries[len(suite.entries):]}]
    if args.dry_run:
        board = Board(suite, entries, args.out, devices.select(args.devices), args.against, write=False)
        return dry_run(board)
    if args.out is None:
        raise UserError("give --out DIR, or --dry-run to see the cost")
    from metadisco.cli.common import output_dir

    out = output_dir(args.out)
    board = Board(suite, entries, out, devices.select(args.devices), args.against)
    board.run(only, say=print_line if getattr(args, "progress", True) else None)
    report = board.report()
    write_board(report, Path(out))
    for line in rank_lines(report):
        print(line)
    for added in entries[len(suite.entries):]:
        say_placement(report, added.name)
    for other in args.versus:
        say_versus(report, other)
    say(f"wrote {out}/board.json, board.md and figures")
    return 0


def say_placement(report: dict, name: str) -> None:
    """An added entry's rank and its P(> each ranked entry)."""
    entry = report["entries"][name]
    if entry["rank"] is None:
        say(f"{name}: not ranked (not finished on every env it can run)")
        return
    score = report["suite"]["score"]
    row = report["improvement"][score][name]
    total = sum(1 for e in report["entries"].values() if e["rank"] is not None)
    others = ", ".join(f"{b} {p:.2f}" for b, p in row.items() if b != name and p is not None)
    say(f"{name}: rank {entry['rank']} of {total} on {score}; P({name} > entry): {others}")


def say_versus(report: dict, other: str) -> None:
    """Per env, P(entry > `other`) [95% CI] of every entry that ran there, on each score the board holds."""
    from metadisco.leaderboard.board import per_env_improvement

    scores = [s for s in (report["suite"]["score"], "eval_return") if s in report["aggregate"]]
    for name in report["entries"]:
        if name == other:
            continue
        for score in dict.fromkeys(scores):
            found = per_env_improvement(report, name, other, score)
            if found:
                cells = ", ".join(f"{env} {v['p']:.2f}" + (f" [{v['ci95'][0]:.2f}, {v['ci95'][1]:.2f}]" if v["ci95"]
                                                          else "") for env, v in found.items())
                print(f"P({name} > {other}) on {score}: {cells}")


def dry_run(board) -> int:
    """Per entry: cells done and left, env steps left, seconds of the done cells."""
    suite = board.suite
    total_left, total_steps, total_seconds = 0, 0, 0.0
    print(f"suite {suite.name}: {len(suite.envs)} envs, {len(board.entries)} entries, lr x "
          f"{'/'.join(f'{s:g}' for s in suite.lr_scales)}, {suite.selection_seeds} selection + "
          f"{suite.report_seeds} report seeds")
    for entry in board.entries:
        done, left, steps, seconds, cannot = 0, 0, 0, 0.0, []
        for env, env_steps in suite.envs:
            slot = board.slots[(env, entry.name)]
            if slot.reason is not None:
                cannot.append(env)
                continue
            wanted = board.wanted(slot)
            cells = len(slot.lrs) + 1
            left += len(wanted)
            done += cells - len(wanted)
            steps += sum((suite.selection_seeds if s == "select" else suite.report_seeds) * env_steps
                         for s, _ in wanted)
            seconds += sum(float(r["run"]["seconds"]) for r in board.records(slot))
        missing = board.missing.get(entry.name)
        note = f"; not run: {missing}" if missing else (f"; cannot run {', '.join(cannot)}" if cannot else "")
        print(f"  {entry.name}: {done} cells done ({seconds:,.0f} s), {left} left ({steps:,} env steps){note}")
        total_left, total_steps, total_seconds = total_left + left, total_steps + steps, total_seconds + seconds
    print(f"total: {total_left} cells left, {total_steps:,} env steps; the done cells took {total_seconds:,.0f} s")
    return 0
