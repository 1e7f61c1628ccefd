"""Held-out evaluation of an objective against baselines, with honest statistics (the library behind
`metadisco evaluate`).

    report, runs = evaluate("dpo", ["CartPole-v1", "Acrobot-v1"], ["ppo"], num_seeds=8, out="out/")
    report, runs = evaluate("dpo", ["Breakout-MinAtar"], ["ppo"], 16, "out/", training=Training(timesteps=500_000),
                            rules=Rules("eval_return", tune=(("lr", (1e-3, 2.5e-3, 5e-3)),)), resume=True)

Envs are evaluated one after another; on each, every method trains the same `num_seeds` seed keys with the
env's preset (see `runner` for how methods share compiled calls), and, when `rules` tune, at every grid point
(`rules`: how the best point is chosen). The work is a plan of cells (env, method, grid point, seed set), each
written atomically under out/cells/ as its compiled call finishes (`metadisco.core.cells`); `resume` runs only
the missing ones, and the report is computed from the cells alone. Writes out/eval.json ({"schema", "settings",
"envs", "aggregate"}: `metadisco.evaluate.layout`, whose `read_report` reads every schema), out/eval.md,
out/curves_<env>.png per env and out/aggregate.png.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from metadisco.core import lock as rundir_lock
from metadisco.core.streams import SELECTION_STREAM
from metadisco.evaluate.methods import Method, held_out_envs, resolve_methods, without_label
from metadisco.evaluate.rules import Rules
from metadisco.evaluate.runner import MethodRun, group_methods, train_env
from metadisco.evaluate.training import Training
from metadisco.runs.random_policy import cached_random_return

__all__ = ["Method", "MethodRun", "Rules", "Training", "default_baselines", "evaluate", "prepare", "group_methods",
           "held_out_envs", "resolve_methods", "train_env"]

def prepare(objective: str, envs: list[str] | None, baselines: list[str] | None, num_seeds: int, *,
            training: Training | None = None, seed: int = 0, rules: Rules | None = None
            ) -> tuple[list[Method], list[str], dict]:
    """(methods, envs, {env: {algorithm: TrainConfig}}) of an evaluation, every argument checked before any training.
    `training`: the preset, budget and changes every method trains with (`Training`; default the env family's
    preset of each method's algorithm: methods of several algorithms, e.g. a learned update rule against PPO, each
    train with their own algorithm's settings, and `--set` changes apply to all)."""
    from dataclasses import replace

    from metadisco.core.coerce import INT32_MAX, check_int, check_seed
    from metadisco.core.errors import SettingError, UserError
    from metadisco.core.limits import check_trainer_fits
    from metadisco.envs import split_budget
    from metadisco.trainers.hyper import with_values

    training = training or Training()
    if num_seeds < 1:
        raise SettingError(f"num_seeds must be a positive integer, got {num_seeds}", ("num_seeds",))
    try:
        check_int("num_seeds", num_seeds, 1, INT32_MAX)
        check_seed("seed", seed)
    except UserError as e:
        raise SettingError(str(e), ("num_seeds", "seed")) from None
    if baselines is None:
        baselines = default_baselines(objective)
    methods = resolve_methods(objective, baselines)
    algorithms = list(dict.fromkeys(m.objective.algorithm for m in methods))  # the objective's first
    if len(algorithms) > 1 and training.preset is not None:
        raise SettingError(f"preset {training.preset!r} is one algorithm's settings, but these methods train with "
                           f"{', '.join(algorithms)}; leave the preset out (each algorithm then takes its env "
                           "family's preset)", ("preset",))
    if not envs:
        run_dir = without_label(objective)
        if not Path(run_dir).is_dir():
            raise SettingError("give envs ID[,ID...] (only a meta-training run directory has default envs)",
                               ("envs",))
        envs = held_out_envs(run_dir)
    budgets = [split_budget(spec) for spec in envs]  # 'ID@TIMESTEPS' sets that env's budget
    ids = [env for env, _ in budgets]
    # A regime is named by its env id, or by 'ID@TIMESTEPS' when the same env is judged at several budgets.
    envs = [env if ids.count(env) == 1 else f"{env}@{budget}" for env, budget in budgets]
    duplicates = sorted({e for e in envs if envs.count(e) > 1 or "@None" in e})
    if duplicates:
        raise SettingError(f"env {duplicates[0].removesuffix('@None')!r} is given twice in envs; give each regime "
                           "once (the same env at several budgets: ID@TIMESTEPS each)", ("envs",))
    # Check everything the user typed before the first (long) training call.
    trainings = training.per_algorithm(algorithms)
    configs = {name: {a: trainings[a].config(env, budget, a) for a in algorithms}
               for name, (env, budget) in zip(envs, budgets, strict=True)}
    if rules is not None and rules.eval_episodes:  # every trained agent then plays them (trainers.greedy)
        configs = {name: {a: replace(c, eval_episodes=rules.eval_episodes) for a, c in by.items()}
                   for name, by in configs.items()}
    for env, by in configs.items():
        for config in by.values():
            check_trainer_fits(config, num_seeds, f"{env}: --seeds {num_seeds:,}")
            for point in (rules.grid() if rules else []):
                with_values(config, point, "--tune")  # a name that is not traced, or a value out of range
    return methods, envs, configs


def unlike_training(objective: str, configs: dict, algorithm: str, tuned: tuple[str, ...] = ()) -> dict:
    """{setting: (meta-trained value, {env: evaluated value})} of each `train` setting that every task of the
    objective's run directory gave alike and that this evaluation's `configs` ({env: {algorithm: TrainConfig}}, from
    `prepare`) give `algorithm` otherwise on some env; settings in `tuned` (a grid varies them) are left out. {} for
    an objective file or a built-in name. An objective judged with other settings than it trained with is a
    legitimate question, but one a researcher should ask on purpose (an update rule's agent, especially)."""
    from metadisco.evaluate.methods import trained_with
    from metadisco.trainers.config import train_setting

    found = {}
    for key, value in trained_with(objective).items():
        if key in tuned or key == "total_timesteps":
            continue
        wanted = train_setting(key, value)
        evaluated = {env: getattr(by[algorithm], key) for env, by in configs.items()}
        other = {env: v for env, v in evaluated.items() if v != wanted}
        if other:
            found[key] = (wanted, other)
    return found


def env_of(regime: str) -> str:
    """The env id of a regime name: 'ID', or 'ID@TIMESTEPS' when an evaluation judges an env at several budgets."""
    from metadisco.envs import split_budget

    return split_budget(regime)[0]


def evaluate(objective: str, envs: list[str] | None, baselines: list[str] | None, num_seeds: int, out: str | Path,
             *, training: Training | None = None, rules: Rules | None = None, seed: int = 0, resume: bool = False,
             devices=None, show_progress: bool = True, call_lines: bool = False
             ) -> tuple[dict, dict[str, dict[str, MethodRun]]]:
    """Evaluate `objective` (name, objective file or run directory) and `baselines` on `envs` (default: a run
    directory's held-out envs); write the report files under `out`. Returns (eval.json content, runs), runs
    being each method's reported run (at its chosen grid point when tuning).
    `baselines` None: the objective's own algorithm's (ppo, or pqn for a TD objective).

    `training` (`Training`): the preset, budget and `--set` changes every method trains with. `rules`
    (`metadisco.evaluate.rules.Rules`): the score, deterministic episodes and tuning grid (default: the final
    return, untuned). Seed keys come from `seed`. The methods x seeds of each env are sharded over `devices`
    (default: every device of this process). `resume`: finish the evaluation whose cells `out` holds.
    `show_progress`: a progress bar on stderr; `call_lines`: one line on stderr per trained call instead, for a
    log file, where a bar's redraws are noise (a judge's calls can take an hour each)."""
    import jax

    from metadisco.core.io import check_output_dir

    rules = rules or Rules()
    training = training or Training()
    methods, envs, configs = prepare(objective, envs, baselines, num_seeds, training=training, seed=seed,
                                     rules=rules)
    out = check_output_dir(out)  # before training: an evaluation never ends by failing to write
    devices = list(jax.local_devices() if devices is None else devices)
    plan = _Plan(methods, envs, configs, num_seeds, seed, rules, devices)
    if jax.process_index() != 0:  # another process of a multi-process run trains its share; process 0 writes
        return plan.run(out, resume, False, write=False)
    with rundir_lock.writing(out):  # one writer per directory
        return plan.run(out, resume, show_progress, call_lines=call_lines)


def selection_keys(num_seeds: int, seed: int):
    """[num_seeds] keys of the seeds a tuned method's grid point is chosen on: independent of `seed_keys`'s."""
    import jax

    return jax.random.split(jax.random.fold_in(jax.random.PRNGKey(seed), SELECTION_STREAM), num_seeds)


class _Plan:
    """An evaluation's cells and the order they are trained in (see the module docstring)."""

    def __init__(self, methods: list[Method], envs: list[str], configs: dict, num_seeds: int, seed: int,
                 rules: Rules, devices: list):
        self.methods, self.envs, self.by_algorithm = methods, envs, configs
        self.algorithm = methods[0].objective.algorithm  # the objective's: its configs are `configs`
        self.configs = {e: by[self.algorithm] for e, by in configs.items()}
        self.num_seeds, self.seed, self.rules, self.devices = num_seeds, seed, rules, devices
        self.groups = group_methods(methods)
        self.grid = rules.grid()

    def settings(self) -> dict:
        """What changes a cell's numbers: a resumed run must have the same (`metadisco.core.cells`)."""
        from metadisco.core.cells import tree_digest
        from metadisco.trainers.config import config_to_dict

        return {"methods": {m.label: {"source": m.source, "spec": m.objective.to_spec(), "meta": tree_digest(m.meta)}
                            for m in self.methods},
                "configs": {e: config_to_dict(c) for e, c in self.configs.items()},
                **self._other_configs(),
                "seeds": self.num_seeds, "seed": self.seed, "rules": self.rules.to_plain(),
                "devices": len(self.devices)}

    def _other_configs(self) -> dict:
        """{"other_algorithms": {algorithm: {env: config}}} of the baselines that train with another algorithm than
        the objective's; {} when all train with its (the records of such evaluations are unchanged)."""
        from metadisco.trainers.config import config_to_dict

        others = {a: {e: config_to_dict(by[a]) for e, by in self.by_algorithm.items()}
                  for a in next(iter(self.by_algorithm.values())) if a != self.algorithm}
        return {"other_algorithms": others} if others else {}

    def config(self, env: str, method: Method):
        return self.by_algorithm[env][method.objective.algorithm]

    def preset_point(self, env: str, method: Method | None = None) -> dict[str, float]:
        """The untuned values of the tuned settings on `env` (its preset's, with --set applied) for `method`'s
        algorithm (None: the objective's)."""
        config = self.configs[env] if method is None else self.config(env, method)
        return {name: float(config.setting(name)) for name, _ in self.rules.tune}

    @staticmethod
    def cell_key(env: str, label: str, seed_set: str, point: dict[str, float]) -> str:
        import numpy as np

        text = ",".join(f"{k}={float(np.float32(v))!r}" for k, v in point.items()) or "preset"
        return f"{env}|{label}|{seed_set}|{text}"

    def run(self, out: Path, resume: bool, show_progress: bool, write: bool = True, call_lines: bool = False):
        from tqdm import tqdm

        from metadisco.core.cells import CellStore
        from metadisco.runs.migrate import upgrade_records

        store = CellStore(out / "cells", self.settings(), resume, "evaluate", write=write, upgrade=upgrade_records)
        points = len(self.grid) * (2 if self.rules.tune_rule == "fresh_seeds" else 1)
        total = len(self.envs) * (1 + len(self.groups) * (1 + points))
        self.call_lines, self.total = call_lines, total
        self.position = 0  # calls done or found in the cells, the random policy's included (a disabled bar counts none)
        untuned: dict[str, dict[str, MethodRun]] = {}
        reported: dict[str, dict[str, MethodRun]] = {}
        tuning: dict[str, dict[str, dict]] = {}
        random_returns: dict[str, float] = {}
        with tqdm(total=total, desc="evaluate", unit="call", file=sys.stderr, disable=not show_progress,
                  dynamic_ncols=True) as progress:
            for env in self.envs:
                progress.set_postfix_str(f"{env}: random policy")
                random_returns[env] = cached_random_return(env_of(env), seed=self.seed)
                self._advance(progress)
                untuned[env], reported[env], tuning[env] = self._env(env, store, progress)
        return self._write(out, untuned, reported, tuning, random_returns, write)

    def _advance(self, progress) -> None:
        progress.update(1)
        self.position += 1

    def _calls(self, env: str, store, progress, wanted: list[tuple[list[Method], str, dict]]) -> dict:
        """Train each (methods, seed set, point) call whose cells are not all in `store`; {cell key: MethodRun}
        of every wanted cell."""
        from metadisco.evaluate.runner import run_from_record, run_record, train_group
        from metadisco.runs.seeds import seed_keys
        from metadisco.trainers.hyper import with_values

        runs = {}
        for index, (methods, seed_set, point) in enumerate(wanted):
            keys = [self.cell_key(env, m.label, seed_set, point) for m in methods]
            if not all(k in store for k in keys):
                what = f"{env}: {', '.join(m.label for m in methods)}" \
                    + (f" ({seed_set} seeds, {_point_text(point)})" if point else "")
                progress.set_postfix_str(what)
                started = time.perf_counter()
                config = self.config(env, methods[0])
                config = with_values(config, point, "--tune") if point else config
                seeds = seed_keys(self.num_seeds, self.seed) if seed_set == "score" \
                    else selection_keys(self.num_seeds, self.seed)
                trained = train_group(env_of(env), methods, config, seeds, self.devices, index)
                for m, key in zip(methods, keys, strict=True):
                    store.put(key, run_record(trained[m.label]))
                if self.call_lines:  # a log file's progress, where a bar's redraws would be noise
                    sys.stderr.write(f"evaluate: call {self.position + 1}/{self.total} trained in "
                                     f"{time.perf_counter() - started:.0f} s: {what}\n")
                    sys.stderr.flush()
            self._advance(progress)
            runs.update({k: run_from_record(store.get(k)) for k in keys})
        return runs

    def _env(self, env: str, store, progress):
        """({label: untuned run}, {label: reported run}, {label: tuning record}) of one env."""
        from metadisco.evaluate.rules import chosen_point

        key = self.cell_key
        runs = self._calls(env, store, progress, [(g, "score", self.preset_point(env, g[0])) for g in self.groups])
        untuned = {m.label: runs[key(env, m.label, "score", self.preset_point(env, m))] for m in self.methods}
        if not self.grid:
            return untuned, untuned, {}
        seed_set = "select" if self.rules.tune_rule == "fresh_seeds" else "score"
        runs.update(self._calls(env, store, progress, [(g, seed_set, p) for p in self.grid for g in self.groups]))
        chosen, tuning = {}, {}
        for m in self.methods:
            candidates = [(p, runs[key(env, m.label, seed_set, p)]) for p in self.grid]
            scored = [(p, getattr(r, self.rules.score)) for p, r in candidates]
            chosen[m.label] = self.grid[chosen_point([s for _, s in scored])]
            tuning[m.label] = {"chosen": chosen[m.label], "rule": self.rules.tune_rule,
                               "selection": [{"point": p, "mean": _finite_mean(s),
                                              "scored_seeds": int(sum(map(_is_finite, s)))} for p, s in scored]}
        if seed_set == "select":  # train each method at its chosen point on the reported seeds
            wanted = []
            for group in self.groups:
                for p in self.grid:
                    members = [m for m in group if chosen[m.label] == p]
                    if members:
                        wanted.append((members, "score", p))
            runs.update(self._calls(env, store, progress, wanted))
        reported = {m.label: runs[key(env, m.label, "score", chosen[m.label])] for m in self.methods}
        return untuned, reported, tuning

    def _write(self, out: Path, untuned, reported, tuning, random_returns, write: bool):
        from metadisco.core.io import atomic_write_text, write_json
        from metadisco.evaluate import summary
        from metadisco.evaluate.layout import SECTIONS, file_record
        from metadisco.evaluate.runner import key_data_of
        from metadisco.figures import eval_curves as figures
        from metadisco.runs.seeds import seed_keys
        from metadisco.trainers.config import config_to_dict

        labels = [m.label for m in self.methods]
        batch_sizes = {e: {m.label: self.config(e, m).batch_size for m in self.methods} for e in self.envs}
        score, scores = self.rules.score, self.rules.scores
        report = summary.summarise(reported, batch_sizes, random_returns, labels[0], labels[1:], self.seed, score,
                                   scores)
        if self.grid:
            plain = summary.summarise(untuned, batch_sizes, random_returns, labels[0], labels[1:], self.seed, score,
                                      scores)
            for env in self.envs:
                for label in labels:
                    u = plain["envs"][env][label]
                    report["envs"][env][label]["tuning"] = {
                        **tuning[env][label],
                        "untuned": {k: u[k] for k in (score, "mean", "std", "iqm", "ci95", "finite_seeds")}}
            report["aggregate"]["untuned_probability_of_improvement"] = plain["aggregate"]["probability_of_improvement"]
            report["aggregate"]["untuned_iqm_normalized"] = plain["aggregate"]["iqm_normalized"]
        config = next(iter(self.configs.values()))
        report["settings"] = {
            "objective": labels[0],
            "baselines": labels[1:],
            "methods": {m.label: {"source": m.source, "spec": m.objective.to_spec()} for m in self.methods},
            "seeds": self.num_seeds,
            "seed": self.seed,
            "score": score,
            "eval_episodes": self.rules.eval_episodes,
            "seed_keys": key_data_of(seed_keys(self.num_seeds, self.seed)),
            "devices": len(self.devices),  # bit-identical results need the same device count (parallel.sharding)
            "timesteps": {e: c.num_updates * c.batch_size for e, c in self.configs.items()},
            "final_window_percent": f"{100 * config.final_window:g}%",
            "random_policy_return": random_returns,
            "configs": {e: config_to_dict(c) for e, c in self.configs.items()},
            **self._other_configs(),
        }
        if self.grid:
            report["settings"]["tuning"] = {
                "grid": {name: list(values) for name, values in self.rules.tune}, "rule": self.rules.tune_rule,
                "preset": {e: self.preset_point(e) for e in self.envs},
                **({"other_algorithms_preset": {m.label: {e: self.preset_point(e, m) for e in self.envs}
                                                for m in self.methods if m.objective.algorithm != self.algorithm}}
                   if self._other_configs() else {}),
                "selection_seed_keys": key_data_of(selection_keys(self.num_seeds, self.seed))
                if self.rules.tune_rule == "fresh_seeds" else None}
        ordered = {name: report[name] for name in SECTIONS}  # eval.json's order: settings first
        if not write:
            return ordered, reported
        out.mkdir(parents=True, exist_ok=True)
        figure_files = {}
        for env in self.envs:
            name = figures.env_file_name(env)
            figures.plot_env_curves(env, ordered["envs"][env], self.num_seeds, out / name)
            figure_files[f"{env} learning curves"] = name
        figures.plot_aggregate(ordered["aggregate"], labels, out / "aggregate.png")
        figure_files["aggregate"] = "aggregate.png"
        write_json(out / "eval.json", file_record(ordered))
        atomic_write_text(out / "eval.md", summary.render_markdown(ordered, figure_files))
        return ordered, reported


def _is_finite(x) -> bool:
    import math

    return math.isfinite(float(x))


def _finite_mean(scores) -> float | None:
    finite = [float(x) for x in scores if _is_finite(x)]
    return sum(finite) / len(finite) if finite else None


def _point_text(point: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in point.items())


def default_baselines(objective) -> list[str]:
    """The baselines an objective is judged against when none are named: its algorithm's handcrafted control
    (`Algorithm.control`: PPO, PQN, DQN, the actor-critic rule). `objective` is what `evaluate` takes (a name, a
    file, a run directory); a `SettingError` where the control is of another algorithm."""
    from metadisco.core.errors import SettingError
    from metadisco.evaluate.methods import method_from
    from metadisco.objectives import BUILTIN_OBJECTIVES
    from metadisco.trainers.algorithm import get_algorithm

    algorithm = method_from(objective).objective.algorithm
    control = get_algorithm(algorithm).control
    if BUILTIN_OBJECTIVES[control].algorithm != algorithm:
        raise SettingError(f"{objective} is a learned {algorithm.replace('_', ' ')}, which has no handcrafted "
                           "twin; give baselines (e.g. ppo,dpo)", ("baselines",))
    return [control]
