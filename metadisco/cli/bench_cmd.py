"""metadisco bench: throughput figures as JSON; `--peers` adds rejax's PPO at the same settings, alternating.

The persistent compilation cache is off for this command: compile times are measured, not read back."""

from __future__ import annotations

from metadisco.cli.common import MAX_TIMESTEPS, add_renamed_option, comma_separated, positive_int, say


def add_parser(sub, name):
    p = sub.add_parser(name, help="measure trainer and env throughput; write JSON")
    p.add_argument("--out", required=True, help="output JSON file")
    p.add_argument("--timesteps", type=positive_int("--timesteps", MAX_TIMESTEPS), default=None,
                   help="env steps per seed for each case (default: 262144)")
    p.add_argument("--envs", type=comma_separated, default=None,
                   help="comma-separated env ids (default: CartPole-v1,SpaceInvaders-MinAtar)")
    p.add_argument("--seed-counts", default="1,16", metavar="N,N,...",
                   help="comma-separated numbers of seeds to vmap, including 1 (default 1,16)")
    # Not --seeds: every other command's --seeds is one count; bench's list was called that until now.
    add_renamed_option(p, "--seeds", "--seed-counts", "a comma-separated list such as 1,16; --seeds is one count "
                       "in every other command")
    p.add_argument("--no-learned", action="store_true",
                   help="skip the cost of learned pieces (learned optimiser, OPEN, LPO) against Adam / PPO: 1 seed, "
                        "each seed count, and a population of 4 members")
    p.add_argument("--peers", action="store_true",
                   help="also run rejax's PPO (pip install -e '.[bench]') at the same settings, alternating: "
                        "steps/s for 1 seed, 16 seeds and a quickstart-shaped population, and compile seconds")
    p.add_argument("--peer-figures", default=None,
                   help="with --peers: comma-separated figure groups, ppo (CartPole: 1 and 16 seeds, population, "
                        "compile, env only), pqn (1 and 16 seeds against rejax's PQN) and minatar (SpaceInvaders: 1 "
                        "and 16 seeds, a short_long_minatar-shaped population, each with its network-only bound; about "
                        "30 min on 2 cores); default ppo,pqn")
    p.add_argument("--purejaxrl", default=None, metavar="DIR",
                   help="with --peers: PureJaxRL's PPO as a second peer of the CartPole figures, from DIR, the "
                        "purejaxrl/ folder of its checkout (default: $METADISCO_PUREJAXRL, else left out)")
    p.add_argument("--only-peers", action="store_true",
                   help="with --peers: write the peer figures alone (skip the per-env cases and learned pieces)")
    p.add_argument("--repeats", type=positive_int("--repeats"), default=3,
                   help="alternating runs per peer figure (default 3)")
    p.add_argument("--meta", action="store_true",
                   help="instead: meta-training figures (ES overhead per generation; env steps/s of populations "
                        "1, 4, 16, 64 on CartPole; --timesteps per member, default 16384; resident memory over "
                        "a 300-generation tiny run)")
    p.add_argument("--recipes", type=comma_separated, default=None, metavar="FILE,FILE,...",
                   help="with --meta: instead, seconds per training generation and per scoring generation (the ES mean "
                        "scored and validated) of each meta-training recipe, run as written for 6 generations, "
                        "scoring every 3 (e.g. experiments/quickstart.yaml,experiments/short_long_minatar.yaml)")
    p.add_argument("--tuned", action="store_true",
                   help="with --meta --recipes: instead, each recipe's training generation with its fitness.tune grid "
                        "against the same recipe without it, alternating (--repeats each, after a compiling one)")
    p.add_argument("--update-rule", action="store_true",
                   help="instead: the learned update rule's trainer (DiscoRL's agent and Disco103's meta-network, "
                        "zero meta-parameters: the same work) on Catch-bsuite (update_rule_classic, 100 updates) and "
                        "SpaceInvaders-MinAtar (update_rule_minatar, 40 updates) at each --seed-counts: env and "
                        "learner steps/s and the time of the agent's network alone on the same batches")
    p.add_argument("--memory", action="store_true",
                   help="instead: resident memory after generation 30 and 300 of a tiny meta-training run (not a "
                        "timing: it may run beside other work)")
    p.set_defaults(run=run, compile_cache=False)


def run(args) -> int:
    from metadisco.bench import train as bench_train
    from metadisco.core.errors import UserError
    from metadisco.core.io import check_output_file, write_json
    from metadisco.envs import check_env_id

    if args.recipes is not None and not args.meta:
        raise UserError("--recipes measures meta-training generations: add --meta")
    if args.memory:
        check_output_file(args.out)
        from metadisco.bench.meta import memory_over_generations

        say("bench memory: a tiny meta-training run of 300 generations, resident memory after each")
        figure = memory_over_generations()
        write_json(args.out, {"machine": bench_train.machine(), "memory_over_generations": figure})
        say(f"resident memory from generation 30 to {figure['generations']}: {100 * figure['growth_fraction']:+.1f}% "
            f"(aim: within 10%); wrote {args.out}")
        return 0
    if args.meta and args.recipes is not None:
        return _recipes(args)
    if args.update_rule:
        if args.meta or args.peers or args.envs is not None or args.timesteps:
            raise UserError("--update-rule measures its own cases (Catch-bsuite and SpaceInvaders-MinAtar at the "
                            "update_rule presets): drop --meta, --peers, --envs and --timesteps")
        return _update_rule(args)
    if args.meta:
        check_output_file(args.out)  # before measuring: a benchmark never ends by failing to write
        from metadisco.bench.meta import bench_meta

        say("bench meta-training: populations 1, 4, 16, 64 on CartPole, then the ES overhead of a short run")
        figures = bench_meta(timesteps=args.timesteps or 16_384)
        write_json(args.out, {"machine": bench_train.machine(), "meta": figures})
        mem = figures["memory_over_generations"]
        say(f"resident memory from generation 30 to {mem['generations']}: {100 * mem['growth_fraction']:+.1f}%")
        say(f"ES overhead {100 * figures['es_overhead']['overhead_fraction']:.2f}% of a generation; "
            + ", ".join(f"P={k.split('_')[1]}: {v['env_steps_per_second']:,.0f} steps/s"
                        for k, v in figures["throughput"].items()) + f"; wrote {args.out}")
        return 0
    cases = list(bench_train.DEFAULT_CASES)
    if args.envs is not None:
        cases = [bench_train.BenchCase(check_env_id(env_id), 262_144) for env_id in args.envs]
        if not cases:
            raise UserError("--envs names no env id; give comma-separated ids, e.g. CartPole-v1,SpaceInvaders-MinAtar")
    if args.timesteps:
        cases = [bench_train.BenchCase(c.env_id, args.timesteps) for c in cases]
    seed_counts = _seed_counts(args.seed_counts)
    from metadisco.core.limits import check_trainer_fits
    from metadisco.runs.seeds import resolve_config

    for case in cases:
        check_trainer_fits(resolve_config(case.env_id, timesteps=case.timesteps), max(seed_counts),
                           f"bench {case.env_id}: --seed-counts {max(seed_counts):,}")
    peer_figures = _peer_figures(args)
    check_output_file(args.out)  # before measuring: a benchmark never ends by failing to write
    if args.peers:
        from metadisco.bench import rejax as peers

        if not peers.available():
            raise UserError("bench --peers needs rejax: pip install -e '.[bench]'")
        if args.purejaxrl is not None:
            import os
            from pathlib import Path

            from metadisco.bench import purejaxrl

            purejaxrl.check_source(Path(args.purejaxrl))
            os.environ[purejaxrl.SOURCE_VARIABLE] = str(Path(args.purejaxrl).resolve())
    from metadisco.bench.roofline import peak_flops

    say("bench: this machine's peak, a float32 matrix product on every device")
    peak = peak_flops()
    results = {"machine": {**bench_train.machine(), "peak": peak}, "cases": {}}
    say(f"  peak {peak['flops_per_second'] / 1e9:,.1f} GFLOP/s ({peak['matmul']})")
    if args.peers:  # first: the headline figures
        from metadisco.bench.peers import bench_peers

        figures = results["peers"] = bench_peers(
            args.timesteps or 262_144, args.repeats, say, peer_figures, peak,
            keep=lambda partial: write_json(args.out, {**results, "peers": partial, "partial": True}))
        head = figures["headline"]
        if "seeds_1_ratio" in head:
            say(f"  metadisco / rejax: 1 seed {head['seeds_1_ratio']:.2f}x, 16 seeds {head['seeds_16_ratio']:.2f}x, "
                f"population {head['population_ratio']:.2f}x (steps/s); compile {head['compile_ratio']:.2f}x "
                "(seconds)")
        if "seeds_1_purejaxrl_ratio" in head:
            say("  metadisco / PureJaxRL: " + ", ".join(
                f"{name.removesuffix('_purejaxrl_ratio').replace('_', ' ')} "
                + ("not timed" if ratio is None else f"{ratio:.2f}x")
                for name, ratio in head.items() if name.endswith("_purejaxrl_ratio")))
        if "ops" in head:
            say("  kernels per training update (metadisco / rejax / PureJaxRL where run): " + "; ".join(
                f"{figure} " + " / ".join(f"{ops['kernels_per_update']:,.0f}" for ops in by_peer.values())
                for figure, by_peer in head["ops"].items()))
        if "pqn_seeds_1_ratio" in head:
            say(f"  PQN, metadisco / rejax: 1 seed {head['pqn_seeds_1_ratio']:.2f}x, 16 seeds "
                f"{head['pqn_seeds_16_ratio']:.2f}x (steps/s)")
        if "minatar_seeds_1_ratio" in head:
            say(f"  MinAtar, metadisco / rejax: 1 seed {head['minatar_seeds_1_ratio']:.2f}x, 16 seeds "
                f"{head['minatar_seeds_16_ratio']:.2f}x, population {head['minatar_population_ratio']:.2f}x (steps/s)")
        if args.only_peers:
            write_json(args.out, results)
            say(f"wrote {args.out}")
            return 0
    for case in cases:
        say(f"bench {case.env_id}: {case.timesteps} steps per seed, seeds {seed_counts}")
        results["cases"][case.env_id] = bench_train.bench_case(case, seed_counts, peak)
        fig = results["cases"][case.env_id]
        say(f"  ratio {fig['ratio']:.3f}, trainer {fig['seeds_1']['trainer_steps_per_second']:,.0f} steps/s "
            f"(1 seed); {fig['flops']['flops_per_env_step']:,.0f} FLOPs per env step; "
            + ", ".join(f"{n} seed(s) {100 * fig[f'seeds_{n}']['fraction_of_peak']:.1f}% of peak"
                        for n in seed_counts))
    if not args.no_learned:
        first = cases[0]
        say(f"bench learned pieces vs Adam / PPO on {first.env_id}: {first.timesteps} steps per seed")
        costs = bench_train.learned_piece_costs(first.env_id, first.timesteps, seed_counts)
        results["learned_pieces"] = costs
        one, pop = costs["seeds_1"], costs["population"]
        say("  cost (x Adam's time per step, 1 seed): "
            f"learned optimiser {one['learned_optimizer']['cost']:.2f}, OPEN {one['open']['cost']:.2f}, "
            f"LPO drift {one['lpo']['cost']:.2f}; per update: Adam {one['adam']['seconds_per_update'] * 1e3:.1f} ms, "
            f"OPEN {one['open']['seconds_per_update'] * 1e3:.1f} ms; population of {pop['members']}: "
            + ", ".join(f"{name} {pop[name]['steps_per_second']:,.0f} steps/s"
                        for name in ("adam", "learned_optimizer", "open", "lpo")))
    results["memory"] = bench_train.peak_memory_bytes()
    write_json(args.out, results)
    say(f"wrote {args.out}")
    return 0


def _recipes(args) -> int:
    """bench --meta --recipes: each recipe's training and scoring generations (`bench.meta.generation_seconds`)."""
    from metadisco.bench import train as bench_train
    from metadisco.bench.meta import generation_seconds
    from metadisco.core.errors import UserError
    from metadisco.core.io import check_output_file, write_json
    from metadisco.meta.load import load_config

    if not args.recipes:
        raise UserError("--recipes names no file; give comma-separated meta-training configs, e.g. "
                        "experiments/quickstart.yaml")
    configs = {path: load_config(path) for path in args.recipes}  # every file checked before any is measured
    check_output_file(args.out)
    if args.tuned:
        return _tuned(args, configs)
    figures = {}
    for path, config in configs.items():
        say(f"bench meta: {path}, 6 generations, the ES mean scored every 3")
        fig = figures[path] = generation_seconds(config, say=say)
        say(f"  warm seconds: training generation {fig['warm_seconds_per_training_generation']:.1f}, scoring "
            f"generation {fig['warm_seconds_per_scoring_generation']:.1f} ({fig['scoring_over_training']:.1f}x); "
            f"before generation 0 {fig['start_seconds']:.1f}")
    write_json(args.out, {"machine": bench_train.machine(), "generations": figures})
    say(f"wrote {args.out}")
    return 0


def _tuned(args, configs: dict) -> int:
    """bench --meta --recipes R --tuned: a tuned recipe's generation against its untuned twin, alternating."""
    from metadisco.bench import train as bench_train
    from metadisco.bench.meta import tuned_generation_cost
    from metadisco.core.errors import UserError
    from metadisco.core.io import write_json

    untuned = [path for path, config in configs.items() if not config.fitness.tune]
    if untuned:
        raise UserError(f"--tuned: recipe {untuned[0]!r} has no fitness.tune grid; give recipes with tuned fitness")
    figures = {}
    for path, config in configs.items():
        say(f"bench meta: {path}, a training generation tuned against untuned, alternating, {args.repeats} each")
        fig = figures[path] = tuned_generation_cost(config, args.repeats, say)
        say(f"  median seconds: untuned {fig['median_untuned']:.1f}, tuned {fig['median_tuned']:.1f} "
            f"({fig['tuned_over_untuned']:.2f}x for a grid of {fig['grid_size']})")
    write_json(args.out, {"machine": bench_train.machine(), "tuned_generations": figures})
    say(f"wrote {args.out}")
    return 0


def _peer_figures(args) -> tuple[str, ...]:
    """--peer-figures as a tuple of known groups; --only-peers and --peer-figures need --peers."""
    from metadisco.bench.peers import DEFAULT_PEER_FIGURES, PEER_FIGURES
    from metadisco.core.errors import UserError, shorten

    if not args.peers and (args.only_peers or args.peer_figures is not None or args.purejaxrl is not None):
        raise UserError("--only-peers, --peer-figures and --purejaxrl choose peer figures: add --peers")
    if args.peer_figures is None:
        return DEFAULT_PEER_FIGURES
    groups = tuple(g.strip() for g in args.peer_figures.split(",") if g.strip())
    if not groups or any(g not in PEER_FIGURES for g in groups):
        raise UserError(f"--peer-figures must be a comma-separated subset of {', '.join(PEER_FIGURES)}, got "
                        f"{shorten(args.peer_figures)}")
    return groups


def _seed_counts(text: str) -> tuple[int, ...]:
    from metadisco.core.errors import UserError, shorten

    try:
        seed_counts = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise UserError(f"--seed-counts must be comma-separated positive integers, got {shorten(text)}") from None
    if 1 not in seed_counts or any(s <= 0 for s in seed_counts):
        raise UserError(f"--seed-counts must be positive and include 1 (the ratio is taken at 1 seed), got "
                        f"{shorten(text)}")
    return seed_counts


def _update_rule(args) -> int:
    """bench --update-rule: the update-rule trainer's figures (`bench.update_rule.bench_update_rule`)."""
    from metadisco.bench import train as bench_train
    from metadisco.bench.update_rule import DEFAULT_RULE_CASES, bench_update_rule
    from metadisco.core.io import check_output_file, write_json

    seed_counts = _seed_counts(args.seed_counts)
    check_output_file(args.out)
    say("bench update rule: Disco103's trainer on " + ", ".join(f"{c.env_id} ({c.updates} updates of {c.preset})"
                                                                for c in DEFAULT_RULE_CASES)
        + f", seeds {seed_counts}")
    figures = bench_update_rule(DEFAULT_RULE_CASES, seed_counts)
    write_json(args.out, {"machine": bench_train.machine(), "update_rule": figures,
                          "memory": bench_train.peak_memory_bytes()})
    for env_id, case in figures["cases"].items():
        say(f"  {env_id}: " + "; ".join(
            f"{n} seed(s) {case[f'seeds_{n}']['trainer_steps_per_second']:,.0f} env steps/s, "
            f"{case[f'seeds_{n}']['learner_steps_per_second']:.2f} learner steps/s, "
            f"{case[f'seeds_{n}']['trainer_over_network_only']:.2f}x the agent's network alone" for n in seed_counts))
    say(f"wrote {args.out}")
    return 0
