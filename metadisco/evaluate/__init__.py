"""Held-out evaluation of an objective against baselines, with honest statistics (the library behind
`metadisco evaluate`).

    report, runs = evaluate("dpo", ["CartPole-v1", "Acrobot-v1"], ["ppo"], num_seeds=8, out="out/")

Envs are evaluated one after another; on each, every method trains the same `num_seeds` seed keys with the
env's preset (see `runner` for how methods share compiled calls). Writes out/eval.json, out/eval.md,
out/curves_<env>.png per env and out/aggregate.png.
"""

from __future__ import annotations

import sys
from pathlib import Path

from metadisco.core import lock as rundir_lock
from metadisco.evaluate.methods import Method, held_out_envs, resolve_methods, without_label
from metadisco.evaluate.runner import MethodRun, group_methods, train_env
from metadisco.runs.random_policy import cached_random_return

__all__ = ["Method", "MethodRun", "evaluate", "prepare", "group_methods", "held_out_envs",
           "resolve_methods", "train_env"]


def prepare(objective: str, envs: list[str] | None, baselines: list[str] | None, num_seeds: int,
            timesteps: int | None = None, overrides=(), seed: int = 0, preset: str | None = None
            ) -> tuple[list[Method], list[str], dict]:
    """(methods, envs, {env: TrainConfig}) of an evaluation, every argument checked before any training."""
    from metadisco.core.coerce import INT32_MAX, check_int, check_seed
    from metadisco.core.errors import UserError
    from metadisco.core.limits import check_trainer_fits
    from metadisco.envs import split_budget
    from metadisco.runs.seeds import resolve_config

    if num_seeds < 1:
        raise UserError(f"--seeds must be a positive integer, got {num_seeds}")
    check_int("--seeds", num_seeds, 1, INT32_MAX)
    check_seed("--seed", seed)
    if baselines is None:
        from metadisco.evaluate.methods import method_from

        baselines = [method_from(objective).objective.algorithm]
    methods = resolve_methods(objective, baselines)
    algorithms = sorted({m.objective.algorithm for m in methods})
    if len(algorithms) > 1:
        by = {a: [m.label for m in methods if m.objective.algorithm == a] for a in algorithms}
        raise UserError(f"one evaluation trains one algorithm: {', '.join(by['ppo'])} are for ppo and "
                        f"{', '.join(by['pqn'])} for pqn; evaluate them apart (--baselines pqn for a TD objective)")
    if not envs:
        run_dir = without_label(objective)
        if not Path(run_dir).is_dir():
            raise UserError("give --envs ID[,ID...] (only a meta-training run directory has default envs)")
        envs = held_out_envs(run_dir)
    budgets = [split_budget(spec) for spec in envs]  # 'ID@TIMESTEPS' sets that env's budget
    ids = [env for env, _ in budgets]
    # A regime is named by its env id, or by 'ID@TIMESTEPS' when the same env is judged at several budgets.
    envs = [env if ids.count(env) == 1 else f"{env}@{budget}" for env, budget in budgets]
    duplicates = sorted({e for e in envs if envs.count(e) > 1 or "@None" in e})
    if duplicates:
        raise UserError(f"env {duplicates[0].removesuffix('@None')!r} is given twice in --envs; give each regime "
                        "once (the same env at several budgets: ID@TIMESTEPS each)")
    # Check everything the user typed before the first (long) training call.
    configs = {name: resolve_config(env, preset, overrides, budget or timesteps, algorithms[0])
               for name, (env, budget) in zip(envs, budgets, strict=True)}
    for env, config in configs.items():
        check_trainer_fits(config, num_seeds, f"{env}: --seeds {num_seeds:,}")
    return methods, envs, configs


def env_of(regime: str) -> str:
    """The env id of a regime name: 'ID', or 'ID@TIMESTEPS' when an evaluation judges an env at several budgets."""
    from metadisco.envs import split_budget

    return split_budget(regime)[0]


def evaluate(objective: str, envs: list[str] | None, baselines: list[str] | None, num_seeds: int, out: str | Path,
             timesteps: int | None = None, overrides=(), seed: int = 0, preset: str | None = None,
             show_progress: bool = True, devices=None, score: str = "final_return"
             ) -> tuple[dict, dict[str, dict[str, MethodRun]]]:
    """Evaluate `objective` (name, objective file or run directory) and `baselines` on `envs` (default: a run
    directory's held-out envs); write the report files under `out`. Returns (eval.json content, runs).
    `baselines` None: the objective's own algorithm's (ppo, or pqn for a TD objective).

    The methods x seeds of each env are sharded over `devices` (default: every device of this process).
    `score`: what the statistics rank, `final_return` or `mean_return` (the area under the learning curve)."""
    import jax

    from metadisco.core.io import check_output_dir
    from metadisco.evaluate import summary

    if score not in summary.SCORES:
        from metadisco.core.errors import unknown_name_error

        raise unknown_name_error("--score", score, summary.SCORES)
    methods, envs, configs = prepare(objective, envs, baselines, num_seeds, timesteps, overrides, seed, preset)
    out = check_output_dir(out)  # before training: an evaluation never ends by failing to write
    if jax.process_index() != 0:  # another process of a multi-process run trains its share; process 0 writes
        return _train_and_write(out, envs, methods, configs, num_seeds, seed, False, devices, score, write=False)
    with rundir_lock.writing(out):  # one writer per directory
        return _train_and_write(out, envs, methods, configs, num_seeds, seed, show_progress, devices, score)


def _train_and_write(out: Path, envs: list[str], methods: list[Method], configs: dict, num_seeds: int, seed: int,
                     show_progress: bool, devices, score: str, write: bool = True
                     ) -> tuple[dict, dict[str, dict[str, MethodRun]]]:
    """Train every method on every env and, with `write`, write the report files under `out` (checked, and
    locked)."""
    import jax
    from tqdm import tqdm

    from metadisco.core.io import atomic_write_text, write_json
    from metadisco.evaluate import summary
    from metadisco.figures import eval_curves as figures
    from metadisco.trainers.config import config_to_dict

    devices = list(jax.local_devices() if devices is None else devices)
    calls = len(group_methods(methods)) + 1  # +1: the random-policy reference
    results: dict[str, dict[str, MethodRun]] = {}
    random_returns: dict[str, float] = {}
    with tqdm(total=len(envs) * calls, desc="evaluate", unit="call", file=sys.stderr,
              disable=not show_progress, dynamic_ncols=True) as progress:
        for env in envs:
            progress.set_postfix_str(f"{env}: random policy")
            random_returns[env] = cached_random_return(env_of(env), seed=seed)
            progress.update(1)
            results[env] = train_env(env_of(env), methods, configs[env], num_seeds, seed, progress, devices)

    labels = [m.label for m in methods]
    key_data = next(iter(results[envs[0]].values())).key_data
    report = summary.summarise(results, {e: c.batch_size for e, c in configs.items()}, random_returns,
                               labels[0], labels[1:], seed, score)
    report["settings"] = {
        "objective": labels[0],
        "baselines": labels[1:],
        "methods": {m.label: {"source": m.source, "spec": m.objective.to_spec()} for m in methods},
        "seeds": num_seeds,
        "seed": seed,
        "score": score,
        "seed_keys": key_data,
        "devices": len(devices),  # results are bit-identical on the same device count (metadisco.parallel.sharding)
        "timesteps": {e: c.num_updates * c.batch_size for e, c in configs.items()},
        "final_window_percent": f"{100 * next(iter(configs.values())).final_window:g}%",
        "random_policy_return": random_returns,
        "configs": {e: config_to_dict(c) for e, c in configs.items()},
    }
    if not write:
        return {"settings": report.pop("settings"), **report}, results
    out.mkdir(parents=True, exist_ok=True)
    figure_files = {}
    for env in envs:
        name = figures.env_file_name(env)
        figures.plot_env_curves(env, report[env], num_seeds, out / name)
        figure_files[f"{env} learning curves"] = name
    figures.plot_aggregate(report["aggregate"], labels, out / "aggregate.png")
    figure_files["aggregate"] = "aggregate.png"
    ordered = {"settings": report.pop("settings"), **report}
    write_json(out / "eval.json", ordered)
    atomic_write_text(out / "eval.md", summary.render_markdown(ordered, figure_files))
    return ordered, results
