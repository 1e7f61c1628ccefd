"""From trained runs to numbers: per-(env, method) statistics, aggregates across envs, eval.json and eval.md.

Conventions (stated in eval.md too):
- score = final return: mean return of the episodes finished in the last `final_window` of updates; or, with
  `score="mean_return"`, the area under the learning curve (mean return of every episode of the run), the
  fitness of the PureJaxRL blog's learned value loss. Both are recorded per seed either way, and the
  probability of improvement is given for both (`probability_of_improvement_by_score`).
- A seed whose losses went non-finite is "diverged"; a seed with no finished episode in the window has "no
  episode". Neither has a score: both are left out of mean / IQM / CI, counted and named in the table, and count
  as losing every comparison in the probability of improvement.
- normalised score = (score - random) / (ppo - random): random = return of a uniformly random policy on that env,
  ppo = PPO's mean score there. 0 is random, 1 is PPO. Envs where either is missing, or where PPO is within 1%
  of random, are left out (and named).
"""

from __future__ import annotations

import math

import numpy as np
import scipy

from metadisco.core import stats
from metadisco.core.stats import stat_block
from metadisco.evaluate.rules import SCORES
from metadisco.evaluate.runner import MethodRun
from metadisco.trainers.metrics import learning_curve

REFERENCE = "ppo"  # the method scores are normalised by, where it was run (`reference_label`)


def reference_label(labels, baseline_labels) -> str:
    """The method scores are normalised by: PPO where it was run, else the first baseline (a DQN judge's DQN, the
    algorithm's control as `Algorithm.judge_against` lists it first)."""
    if REFERENCE in labels or not baseline_labels:
        return REFERENCE
    return baseline_labels[0]


def scores_of(run: MethodRun, score: str) -> np.ndarray:
    """[seeds] the run's `score` (one of `metadisco.evaluate.rules.SCORES`), NaN where a seed has none."""
    values = getattr(run, score)
    return np.full(run.final_return.shape, np.nan) if values is None else values


def seed_status(run: MethodRun) -> list[str]:
    """'ok', 'diverged' or 'no_episode' for each seed."""
    return ["diverged" if d else ("ok" if math.isfinite(r) else "no_episode")
            for d, r in zip(run.diverged.tolist(), run.final_return.tolist(), strict=True)]


def summarise(results: dict[str, dict[str, MethodRun]], batch_sizes: dict[str, int | dict[str, int]],
              random_returns: dict[str, float], objective_label: str, baseline_labels: list[str],
              seed: int = 0, score: str = "final_return", scores: tuple[str, ...] = SCORES[:2]) -> dict:
    """The eval.json content minus "settings": {"envs": {env: {method: {...}}}, "aggregate": {...}}
    (`metadisco.evaluate.layout`); statistics of `score` (one of `scores`, the scores every run has). `batch_sizes`:
    env steps per update on each env, or per env and method label (methods of several algorithms)."""
    out: dict = {}
    normalised: dict[str, dict[str, np.ndarray]] = {}  # env -> method -> normalised finite scores
    excluded: dict[str, str] = {}
    ref = reference_label(list(next(iter(results.values()), {})), baseline_labels)
    for env_id, runs in results.items():
        out[env_id] = {}
        reference = runs.get(ref)
        ref_scores = stats.finite(scores_of(reference, score)) if reference is not None else np.zeros(0)
        ref_mean = float(np.mean(ref_scores)) if ref_scores.size else float("nan")
        low = random_returns.get(env_id, float("nan"))
        scale = ref_mean - low
        # A reference no better than random (within 1% of the returns' size) would blow normalised scores up.
        can_normalise = math.isfinite(scale) and abs(scale) > 0.01 * max(abs(ref_mean), abs(low), 1.0)
        if not can_normalise:
            excluded[env_id] = (f"no {ref} run" if reference is None else
                                f"no finite {ref} score" if not math.isfinite(ref_mean) else
                                "random policy finished no episode" if not math.isfinite(low) else
                                f"{ref} within 1% of a random policy")
        normalised[env_id] = {}
        for label, run in runs.items():
            status = seed_status(run)
            batch = batch_sizes[env_id][label] if isinstance(batch_sizes[env_id], dict) else batch_sizes[env_id]
            steps, curve = learning_curve(run.curves.episode_return, run.curves.episode_count, batch)
            mean, lo, hi = stats.mean_curve_ci(curve, seed=seed)
            entry = {
                **{name: scores_of(run, name) for name in scores},
                "score": score,
                **stat_block(scores_of(run, score), seed),
                "seeds": len(status),
                "finite_seeds": status.count("ok"),
                "diverged_seeds": [i for i, s in enumerate(status) if s == "diverged"],
                "no_episode_seeds": [i for i, s in enumerate(status) if s == "no_episode"],
                "seed_status": status,
                "normalized": None,
                "compiled_call": run.group,
                "call_seconds": run.seconds,
                "curve": {"env_steps": steps, "mean": mean, "ci95_low": lo, "ci95_high": hi},
            }
            if can_normalise:
                norm = (scores_of(run, score) - low) / scale
                entry["normalized"] = {score: norm, **stat_block(norm, seed)}
                normalised[env_id][label] = stats.finite(norm)
            out[env_id][label] = entry
    return {"envs": out, "aggregate": aggregate(results, normalised, excluded, objective_label, baseline_labels,
                                                 seed, score, scores, ref)}


def _improvement(results, objective_label, baseline_labels, seed, score) -> dict:
    """{"X > Y": {"p", "ci95", "per_env", "per_env_ci95"}}: P(objective > baseline) on `score`, averaged over
    envs, and on each env alone with its own bootstrap CI (seeds resampled within the env)."""
    improvement = {}
    for baseline in baseline_labels:
        pairs = [(scores_of(results[e][objective_label], score), scores_of(results[e][baseline], score))
                 for e in results]
        p, ci = stats.aggregate_probability_of_improvement(pairs, seed=seed)
        alone = {e: stats.aggregate_probability_of_improvement([pair], seed=seed)
                 for e, pair in zip(results, pairs, strict=True)}
        improvement[f"{objective_label} > {baseline}"] = {
            "p": p, "ci95": list(ci) if ci is not None else None,
            "per_env": {e: p_env for e, (p_env, _) in alone.items()},
            "per_env_ci95": {e: list(ci_env) if ci_env is not None else None for e, (_, ci_env) in alone.items()}}
    return improvement


def aggregate(results, normalised, excluded, objective_label, baseline_labels, seed,
              score: str = "final_return", scores: tuple[str, ...] = SCORES[:2], reference: str = REFERENCE) -> dict:
    """Across envs: IQM of normalised scores (stratified bootstrap over envs) and P(objective > baseline), on
    `score`; P(objective > baseline) on every score too."""
    labels = list(next(iter(results.values())))
    envs_used = [e for e in results if e not in excluded]
    iqm_normalised = {}
    for label in labels:
        strata = [normalised[e][label] for e in envs_used if normalised[e][label].size]
        if not strata:
            iqm_normalised[label] = None
            continue
        ci = stats.stratified_iqm_ci(strata, seed=seed)
        iqm_normalised[label] = {"iqm": float(stats.iqm(np.concatenate(strata))),
                                 "ci95": list(ci) if ci is not None else None,
                                 "scores": int(sum(s.size for s in strata))}
    improvement = _improvement(results, objective_label, baseline_labels, seed, score)
    return {
        "score": score,
        "normalization": f"(score - random policy) / ({reference} mean - random policy)",
        "normalized_envs": envs_used,
        "excluded_envs": excluded,
        "iqm_normalized": iqm_normalised,
        "probability_of_improvement": improvement,
        "probability_of_improvement_by_score": {
            s: improvement if s == score else _improvement(results, objective_label, baseline_labels, seed, s)
            for s in scores},
        "bootstrap": {"method": "stratified percentile bootstrap", "resamples": stats.REPS,
                      "library": f"scipy {scipy.__version__}"},
    }


# ------------------------------------------------------------------------------------------------ eval.md


def _num(x, digits=1) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def return_digits(*xs) -> int:
    """Decimals that show returns to three significant figures of the largest of `xs` (one cell's numbers share
    them), from one to three: 1834.2 and -23.5 as they are, Catch's 0.995 and 0.985 not both as 1.0."""
    big = max((abs(x) for x in xs if x is not None and math.isfinite(x)), default=0.0)
    return 1 if big == 0.0 else min(3, max(1, 2 - math.floor(math.log10(big))))


def return_text(x, *cell) -> str:
    """A return `x` at `return_digits` of it and the other numbers of its `cell`; "n/a" when missing."""
    return _num(x, return_digits(x, *cell))


def _iqm_ci(block: dict | None, digits: int | None = None) -> str:
    """"iqm [lo, hi]"; `digits` None: a return's (`return_digits` of the cell)."""
    if not block or block.get("iqm") is None:
        return "n/a"
    ci = block.get("ci95")
    if digits is None:
        digits = return_digits(block["iqm"], *(ci or ()))
    ci_text = f" [{_num(ci[0], digits)}, {_num(ci[1], digits)}]" if ci else " [CI n/a]"
    return f"{_num(block['iqm'], digits)}{ci_text}"


def _p_ci(p, ci, missing: str = " [CI n/a]") -> str:
    """"p [lo, hi]" to 2 digits; `missing` where there is no interval."""
    return _num(p, 2) + (f" [{_num(ci[0], 2)}, {_num(ci[1], 2)}]" if ci else missing)


def _per_env(block: dict) -> str:
    """"env: p [lo, hi], ..." (a report written before per-env CIs were kept: "env: p, ...")."""
    cis = block.get("per_env_ci95", {})
    return ", ".join(f"{e}: {_p_ci(p, cis.get(e), '')}" for e, p in block["per_env"].items())


def _seeds_cell(entry: dict) -> str:
    text = f"{entry['finite_seeds']}/{entry['seeds']}"
    notes = []
    if entry["diverged_seeds"]:
        notes.append(f"diverged: {', '.join(map(str, entry['diverged_seeds']))}")
    if entry["no_episode_seeds"]:
        notes.append(f"no episode: {', '.join(map(str, entry['no_episode_seeds']))}")
    return text + (f" ({'; '.join(notes)})" if notes else "")


def render_markdown(report: dict, figures: dict[str, str]) -> str:
    """eval.md: one table per env x method, one aggregate table, the conventions and the figures; `report` in
    the layout of `metadisco.evaluate.layout`."""
    settings = report["settings"]
    methods = list(settings["methods"])
    score = settings.get("score", "final_return")
    score_text = {
        "final_return": "the final return, i.e. the mean return of the episodes finished in the last "
                        f"{settings['final_window_percent']} of updates (where none finished there, of the latest "
                        "update that finished any)",
        "mean_return": "the area under the learning curve, i.e. the mean return of every episode finished during "
                       "training",
        "eval_return": f"the mean return of {settings.get('eval_episodes')} deterministic episodes of each trained "
                       "agent's mode (greedy actions; the Gaussian's mean), as DiscoBench and OPEN score",
    }[score]
    lines = [
        f"# Held-out evaluation: {settings['objective']} against {', '.join(settings['baselines'])}",
        "",
        f"{settings['seeds']} seeds per method and env (base seed {settings['seed']}; the same seed keys for "
        f"every method). Score: {score_text}. IQM: interquartile mean over seeds, with a 95% "
        f"percentile-bootstrap CI ({report['aggregate']['bootstrap']['resamples']} resamples). Normalised: "
        f"{report['aggregate']['normalization']}. Seeds: finished / run; diverged seeds (non-finite losses) "
        "and seeds that finished no episode have no score and are named here.",
        "",
        "| Env | Steps | Method | IQM [95% CI] | Mean ± std | Normalised IQM [95% CI] | Seeds |",
        "|---|---:|---|---|---|---|---|",
    ]
    for env, entries in report["envs"].items():
        for label in methods:
            e = entries[label]
            mean_std = (f"{return_text(e['mean'], e['std'])} ± {return_text(e['std'], e['mean'])}"
                        if e["mean"] is not None else "n/a")
            lines.append(f"| {env} | {settings['timesteps'][env]:,} | {label} | {_iqm_ci(e)} | {mean_std} | "
                         f"{_iqm_ci(e['normalized'], 2)} | {_seeds_cell(e)} |")
    agg = report["aggregate"]
    lines += ["", f"## Across envs ({', '.join(agg['normalized_envs']) or 'none normalisable'})", ""]
    if agg["excluded_envs"]:
        lines.append("Left out of the normalised aggregate: " +
                     "; ".join(f"{e} ({why})" for e, why in agg["excluded_envs"].items()) + ".")
        lines.append("")
    lines += ["| Method | IQM of normalised scores [95% CI] |", "|---|---|"]
    for label in methods:
        lines.append(f"| {label} | {_iqm_ci(agg['iqm_normalized'][label], 2)} |")
    lines += ["", "| Comparison | P(improvement) [95% CI] | Per env |", "|---|---|---|"]
    for name, block in agg["probability_of_improvement"].items():
        lines.append(f"| P({name}) | {_p_ci(block['p'], block['ci95'])} | {_per_env(block)} |")
    for other, blocks in agg.get("probability_of_improvement_by_score", {}).items():
        if other == score:
            continue
        for name, block in blocks.items():
            lines.append(f"| P({name}), on {other} | {_p_ci(block['p'], block['ci95'])} | {_per_env(block)} |")
    lines += ["", "P(X > Y): the chance that a random seed of X scores above a random seed of Y on the same env "
              "(ties half), averaged over envs; seeds without a score lose every comparison.", ""]
    lines += _tuning_lines(report)
    if figures:
        lines += ["## Figures", ""] + [f"![{name}]({path})" for name, path in figures.items()] + [""]
    return "\n".join(lines)


def nothing_scored(tuning: dict) -> bool:
    """Whether no grid point scored a finite selection score on any seed (a tuning record of eval.json): then the
    chosen point is the grid's first by default, not a choice (e.g. the final return where no episode ends in
    training, as Freeway's 2,500-step episodes at 2,432 steps per env)."""
    return all(p["scored_seeds"] == 0 for p in tuning["selection"])


def _presets_text(report: dict) -> str:
    """The untuned values of the tuned settings: one set for every method, or each method's where methods of other
    algorithms train with their own presets (a learned update rule against PPO)."""
    tuning = report["settings"]["tuning"]
    other = tuning.get("other_algorithms_preset", {})

    def values(per_env: dict) -> str:
        return "; ".join(f"{env} {', '.join(f'{k}={v:g}' for k, v in point.items())}" for env, point in per_env.items())

    if not other:
        return f"the preset's values ({values(tuning['preset'])})"
    return "each method's own preset's values (" + "; ".join(
        f"{label}: {values(other.get(label, tuning['preset']))}" for label in report["settings"]["methods"]) + ")"


def _tuning_lines(report: dict) -> list[str]:
    """eval.md's tuning section: each method's chosen grid point, its untuned figure, and the selection scores."""
    tuning = report["settings"].get("tuning")
    if not tuning:
        return []
    rule = ("chosen on selection seeds (keys disjoint from the reported seeds), then trained at that point on the "
            "reported seeds" if tuning["rule"] == "fresh_seeds" else
            "chosen and reported on the same seeds (DiscoBench's rule: optimistic by the maximum over the grid)")
    lines = ["## Tuning", "",
             f"Every method trained at every point of the grid {tuning['grid']} and is reported above at its own best "
             f"point ({rule}); the best point has the most scored seeds, then the highest mean "
             f"{report['settings']['score']}. Untuned: {_presets_text(report)}, on the reported seeds.", "",
             "| Env | Method | Chosen | Tuned IQM [95% CI] | Untuned IQM [95% CI] | Selection mean score per point |",
             "|---|---|---|---|---|---|"]
    for env, entries in report["envs"].items():
        for label, entry in entries.items():
            t = entry["tuning"]
            chosen = ", ".join(f"{k}={v:g}" for k, v in t["chosen"].items())
            if nothing_scored(t):
                chosen += " (no point scored: the grid's first, not a choice)"
            per_point = "; ".join(f"{', '.join(f'{k}={v:g}' for k, v in p['point'].items())}: "
                                  f"{return_text(p['mean'])} ({p['scored_seeds']} seeds)" for p in t["selection"])
            lines.append(f"| {env} | {label} | {chosen} | {_iqm_ci(entry)} | {_iqm_ci(t['untuned'])} | {per_point} |")
    untuned = report["aggregate"].get("untuned_probability_of_improvement", {})
    if untuned:
        lines += ["", "| Comparison, untuned | P(improvement) [95% CI] |", "|---|---|"]
        for name, block in untuned.items():
            lines.append(f"| P({name}) | {_p_ci(block['p'], block['ci95'])} |")
    return lines + [""]
