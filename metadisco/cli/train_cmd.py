"""metadisco train: train N seeds of one objective on one env and write DIR/summary.json."""

from __future__ import annotations

import numpy as np

from metadisco.cli import common


def add_parser(sub, name):
    p = sub.add_parser(name, help="train N seeds of the inner trainer with one objective")
    p.add_argument("--env", required=True, help="env id (see `metadisco envs`)")
    p.add_argument("--objective", default="ppo",
                   help="built-in name (ppo, dpo, pqn), objective file, or meta-training run directory; a TD "
                        "objective (pqn's) trains with algorithm pqn")
    p.add_argument("--seeds", type=common.positive_int("--seeds"), default=1)
    p.add_argument("--timesteps", type=common.positive_int("--timesteps", common.MAX_TIMESTEPS), default=None,
                   help="env steps per seed (default: the preset's)")
    p.add_argument("--preset", default=None, help="trainer preset (default: chosen from the env id)")
    p.add_argument("--seed", type=common.seed_int("--seed"), default=0,
                   help="base seed (0 <= seed < 2**32); seed keys are split from it")
    common.add_set_option(p)
    p.add_argument("--out", required=True, help="output directory")
    common.add_track_option(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from metadisco.core.io import write_json
    from metadisco.core.limits import check_trainer_fits
    from metadisco.envs import make_env
    from metadisco.objectives.resolve import resolve_objective
    from metadisco.parallel import devices
    from metadisco.runs.seeds import resolve_config, train_seeds
    from metadisco.trainers.config import config_to_dict
    from metadisco.trainers.metrics import diverged

    objective, meta = resolve_objective(args.objective)
    config = resolve_config(args.env, args.preset, args.overrides, args.timesteps, objective.algorithm)
    check_trainer_fits(config, args.seeds, f"--seeds {args.seeds:,}")
    used = devices.select(args.devices)
    out = common.output_dir(args.out)  # before training: a run never ends by failing to write
    tracking = common.open_tracking(args, out, {"env": args.env, "objective": args.objective, "seeds": args.seeds,
                                                "seed": args.seed, **config_to_dict(config)})
    common.say(f"training {args.seeds} seed(s) of {args.objective} on {args.env} over {len(used)} device(s): "
               f"{config.num_updates} updates of {config.batch_size} steps (compiling first)")
    result = train_seeds(args.env, objective, meta, config, args.seeds, args.seed, used)
    curve = result.return_curve
    summary = {
        "env": args.env,
        "objective": args.objective,
        "objective_spec": objective.to_spec(),
        "algorithm": config.algorithm,
        "seeds": args.seeds,
        "seed": args.seed,
        "timesteps": config.num_updates * config.batch_size,
        "final_return": result.final_return,
        "final_return_mean": float(np.nanmean(result.final_return)) if np.isfinite(result.final_return).any()
        else None,
        "diverged_seeds": int(np.sum(~np.isfinite(result.final_return))),  # or no episode ended
        "losses_finite": (~np.asarray(diverged(result.metrics))).tolist(),  # per seed: no loss went non-finite
        "steps_per_second": result.steps_per_second,
        "compile_seconds": result.compile_seconds,
        "compile_cached": result.compile_cached,
        "trace_seconds": result.trace_seconds,
        "train_seconds": result.train_seconds,
        # Same seed and device count: bit-identical results; another device count: statistically the same.
        "devices": result.devices,
        "config": config_to_dict(config),
        "return_curve": curve,  # per update, mean over seeds of finished-episode returns
    }
    if result.metrics.eval_return is not None:  # --set eval_episodes=N: the trained agents' deterministic episodes
        from metadisco.trainers.metrics import reduce_fitness

        played = np.asarray(reduce_fitness("eval_return", result.metrics, config.final_window))
        summary["eval_return"] = played  # per seed: mean return of its eval_episodes episodes of the policy's mode
        summary["eval_return_mean"] = float(np.nanmean(played)) if np.isfinite(played).any() else None
    if result.metrics.achievements is not None:  # Craftax: the fraction of episodes unlocking each achievement
        names = getattr(make_env(args.env), "achievement_names", None)
        window = max(1, round(config.final_window * config.num_updates))
        rates = np.asarray(result.metrics.achievements)[:, -window:]  # [seeds, updates, achievements]
        counts = np.asarray(result.metrics.episode_count)[:, -window:, None]
        unlocked = np.sum(np.where(counts > 0, rates * counts, 0.0), axis=(0, 1))
        pooled = unlocked / np.sum(counts) if np.sum(counts) else np.full(rates.shape[-1], None)
        summary["achievements"] = {  # over the episodes that ended in the final window, every seed pooled
            "episodes": int(np.sum(counts)), **dict(zip(names or map(str, range(len(pooled))), pooled.tolist(),
                                                        strict=True))}
    write_json(out / "summary.json", summary)
    if tracking is not None:  # per update, the mean over seeds of each training metric (after the jitted run)
        for update, line in enumerate(update_lines(result.metrics, config.batch_size)):
            tracking.log(update, line)
        tracking.close()
    finite = result.final_return[np.isfinite(result.final_return)]
    mean = f"{finite.mean():.1f}" if finite.size else "n/a"
    common.say(f"final return {mean} (mean of {finite.size}/{args.seeds} seeds), "
               f"{result.steps_per_second:,.0f} env steps/s, compile {result.compile_seconds:.1f}s"
               f"{' (from the cache)' if result.compile_cached else ''}, trace {result.trace_seconds:.1f}s; "
               f"wrote {out / 'summary.json'}")
    return 0


def update_lines(metrics, batch_size: int) -> list[dict]:
    """One line per update of a `train` run: env steps so far and the mean over seeds of each scalar training
    metric (episode return over the seeds where an episode ended, NaN where none did)."""
    from metadisco.core.stats import seed_mean
    from metadisco.trainers.metrics import named_numbers

    fields = {name: np.asarray(value, np.float64) for name, value in named_numbers(metrics).items()}  # [seeds, updates]
    updates = next(iter(fields.values())).shape[1]
    means = {name: seed_mean(value, 0, diverged="skip") for name, value in fields.items()}
    return [{"env_steps": (u + 1) * batch_size, **{name: float(m[u]) for name, m in means.items()}}
            for u in range(updates)]

