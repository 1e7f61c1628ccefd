"""Will this config learn? The signal-to-noise ratio of the ES gradient at a config's population and seeds.

OpenES estimates its gradient from antithetic pairs: pair i contributes d_i = f(mean + sigma e_i) -
f(mean - sigma e_i) times e_i. With S seeds per member, d_i = Delta_i + noise, where Delta_i is the true
difference (what sigma-sized perturbations change) and the noise comes from training seeds (common random
numbers already cancel what both members of a pair share). The probe trains the ES mean, PPO and k antithetic
pairs drawn as the strategy draws them, on R x S seeds each (R blocks of the config's S seeds), and estimates

    signal   = Var_i(mean_s d_i) - mean_i Var_s(d_i) / (R S)       (unbiased: the noise of the means removed)
    noise_S  = mean_i Var_s(d_i) / S                               (the noise of one pair's d at S seeds)
    pair_snr = signal / noise_S        signal_fraction = pair_snr / (1 + pair_snr)

`signal_fraction` is the share of a pair's fitness difference that is signal: the ES gradient estimate has the
same expected direction as with noiseless fitness, but its useful pairs are (P / 2) x signal_fraction. The
split-half reliability (the correlation over pairs of d_i measured on two disjoint blocks of S seeds) checks the
same thing without a model. Differences are in PPO-normalised units (each task's PPO-over-random gap), so tasks
combine as the fitness does. Since pair_snr grows linearly with S, S / pair_snr seeds give pair_snr = 1.
With `sampling.scale`, each block of S seeds trains at its own draw of the settings, as a generation would.
"PPO" here and in the report's keys is the objective's baseline, the objective at zero meta-parameters
(`metadisco.trainers.algorithm.baseline_of`: PPO for the PPO-family pieces, DPO for a `learned_dpo` drift, ...).
"""

from __future__ import annotations

import contextlib
import math
import warnings

import jax
import numpy as np

from metadisco.core.cells import pack_array, unpack_array
from metadisco.core.errors import UserError
from metadisco.core.streams import PROBE_STREAM
from metadisco.meta import paired
from metadisco.meta.baselines import measure_random
from metadisco.meta.fitness import ppo_gap
from metadisco.meta.tasks import draw_settings
from metadisco.parallel import hosts

VERDICTS = ((0.5, "usable: most of each pair's fitness difference is signal"),
            (0.2, "weak: seed noise hides most of the signal; raise seeds (or population)"),
            (0.0, "noise: the ES gradient would be mostly seed noise; this config will not learn"))


def _pair_stats(d: np.ndarray, seeds_per_member: int) -> dict:
    """d: [k pairs, N seeds] fitness differences (finite)."""
    k, n = d.shape
    within = float(np.mean(np.var(d, axis=1, ddof=1)))
    signal = max(float(np.var(d.mean(axis=1), ddof=1)) - within / n, 0.0) if k > 1 else 0.0
    noise = within / seeds_per_member
    snr = signal / noise if noise > 0 else math.inf
    blocks = n // seeds_per_member
    halves = [d[:, b * seeds_per_member:(b + 1) * seeds_per_member].mean(axis=1) for b in range(blocks)]
    corr = [float(np.corrcoef(halves[b], halves[b + 1])[0, 1]) for b in range(0, blocks - 1, 2) if k > 2]
    return {"pair_snr": snr, "signal_fraction": snr / (1 + snr) if math.isfinite(snr) else 1.0,
            "signal_std": math.sqrt(signal), "noise_std_at_seeds": math.sqrt(noise),
            "split_half_reliability": float(np.nanmean(corr)) if corr else None,
            "seeds_for_snr_1": math.ceil(seeds_per_member / snr) if snr > 0 else None}


def _combine(diffs: list[np.ndarray], seeds: list[int], repeats: int) -> tuple[np.ndarray, int]:
    """The pairs' combined differences over tasks, as a generation that trains every task sees them, and the number
    of seeds one member's fitness averages in those units.

    diffs[t]: [k pairs, repeats x seeds[t]] normalised differences on task t. Where every task trains the same
    seeds S, seed s of every task forms one combined run: [k, R x S], S per member. Where seed counts differ
    there is no common seed axis, so each block of a task's seeds is averaged first, as the fitness averages
    them: [k, R], one block per member (advice then counts multiples of the config's seeds)."""
    with _quiet_nan():  # an all-NaN task (or block) leaves NaN, as intended
        if len(set(seeds)) == 1:
            return np.nanmean(np.stack(diffs), axis=0), seeds[0]
        blocks = [np.nanmean(d.reshape(d.shape[0], repeats, -1), axis=2) for d in diffs]
        return np.nanmean(np.stack(blocks), axis=0), 1


@contextlib.contextmanager
def _quiet_nan():
    """numpy's all-NaN RuntimeWarnings off: a task without scores is named by a note (cli/probe_cmd.py) instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _task_stats(F: np.ndarray, k: int, S: int, repeats: int, random: float) -> tuple[dict, np.ndarray]:
    """One task's figures and its pairs' normalised differences [k, R x S] (NaN where a run has no final return).

    F: [rows, R x S] final returns; rows 0..k-1 are the + members, k..2k-1 their mirrors, 2k the ES mean, 2k+1 PPO.
    A seed column enters the pair statistics only where every probed member has a final return there."""
    ppo_runs, mean_runs = F[2 * k + 1], F[2 * k]
    scale = float(ppo_gap(paired.run_mean(ppo_runs), random))
    d = (F[:k] - F[k:2 * k]) / scale
    ok = np.all(np.isfinite(d), axis=0)
    stats = _pair_stats(d[:, ok], S) if ok.sum() >= 2 else {}
    with _quiet_nan():
        row = {
            "seeds": int(repeats * S), "baseline": paired.run_mean(ppo_runs), "random": random,
            "mean": paired.run_mean(mean_runs), "seed_std": float(np.nanstd(mean_runs, ddof=1)),
            "member_std": float(np.nanstd(np.nanmean(F[:2 * k], axis=1), ddof=1)), "baseline_gap": scale,
            "diverged_runs": int(np.sum(~np.isfinite(F[:2 * k + 2]))), "scored_seeds": int(ok.sum()), **stats,
        }
    return row, np.where(np.isfinite(d), d, np.nan)


def verdict(signal_fraction: float) -> str:
    return next(text for threshold, text in VERDICTS if signal_fraction >= threshold)


def probe(step, repeats: int = 4, progress=None, store=None) -> dict:
    """Probe a config's `GenerationStep`: per task and combined statistics (see the module docstring). Each task
    trains the population program `repeats` times on fresh seed blocks. `store` (a `metadisco.core.cells.CellStore`,
    optional): each block's final returns are a cell, written as it finishes and read instead of trained when
    present, so a killed probe resumes where it stopped and ends as an uninterrupted one."""
    config = step.config
    if config.fitness.tune:
        raise UserError("the probe measures each seed's pair difference, which a best-of-grid fitness (fitness.tune) "
                        "does not have; probe at one grid point instead: --set fitness=" + config.fitness.score
                        + " --set tasks.0.train.lr=<a grid value>")
    if step.problem.control_objective is not None:
        raise UserError(f"the probe pairs each member with its control in one program, and this objective's control "
                        f"({step.problem.control_name}) trains in a program of its own; probe with normalise: fixed")
    P, devices = config.strategy.population_size, step.mesh.devices.size
    rows = paired.count_rows(P, devices)
    k = min(P // 2, (rows - 2) // 2)
    random = measure_random(step.problem)
    es_state = step.init()
    population = hosts.to_host(step.ask(jax.random.fold_in(step.base_key, 0), es_state)[0])
    mean = step.solution(es_state)
    # evosax's antithetic members are i and i + P/2: check rather than assume
    plus = jax.tree.map(lambda x: x[:k], population)
    minus = jax.tree.map(lambda x: x[P // 2:P // 2 + k], population)
    mirrored = all(np.allclose(a + b, 2 * m[None], atol=1e-5) for a, b, m in
                   zip(jax.tree.leaves(plus), jax.tree.leaves(minus), jax.tree.leaves(mean), strict=True))
    if not mirrored:
        raise ValueError("the strategy's members are not antithetic pairs (i, i + P/2); the probe needs OpenES-style "
                         "mirrored sampling")
    block = paired._concat(paired._concat(plus, minus), paired._stack([mean, step.problem.control]))
    if rows > 2 * k + 2:
        block = paired._concat(block, paired._stack([step.problem.control] * (rows - 2 * k - 2)))
    block = hosts.to_global(block, step.mesh)
    per_task, diffs = {}, []
    scale = dict(config.sampling.scale)
    for task in step.problem.tasks:
        S = task.cfg.seeds
        stream = jax.random.fold_in(jax.random.fold_in(step.base_key, PROBE_STREAM), task.index)
        keys = np.asarray(jax.random.split(jax.random.fold_in(stream, task.timesteps), repeats * S))
        outs = []
        for r in range(repeats):
            seeds = keys[r * S:(r + 1) * S]
            # with `sampling.scale` each block trains at its own draw of the settings, as a generation does: the
            # part of a pair's difference that depends on the draw counts as noise, as it does for the ES
            key = f"{task.name}|block {r}"
            if store is not None and key in store:
                outs.append(unpack_array(store.get(key)["final_return"]))
            else:
                drawn = draw_settings(jax.random.fold_in(stream, r), task, scale) if scale else task
                outs.append(np.asarray(step.problem.train_rows(drawn, block, paired.rows_of(seeds, rows))))
                if store is not None:
                    store.put(key, {"final_return": pack_array(outs[-1])})
            if progress is not None:
                progress.update(1)
        F = np.concatenate(outs, axis=1).astype(np.float64)  # [rows, R*S]
        per_task[task.name], d = _task_stats(F, k, S, repeats, random[task.cfg.env])
        diffs.append(d)
    combined_d, unit = _combine(diffs, [t.cfg.seeds for t in step.problem.tasks], repeats)
    ok = np.all(np.isfinite(combined_d), axis=0)
    combined = _pair_stats(combined_d[:, ok], unit) if ok.sum() >= 2 else {}
    sf = combined.get("signal_fraction", 0.0)
    need = combined.get("seeds_for_snr_1")
    if need and unit == 1:  # tasks train different seed counts: advise a multiple of each task's seeds
        advice = f"{need}x each task's seeds per member for pair SNR 1"
    else:
        advice = f"seeds per member >= {need} for pair SNR 1" if need else "no measurable signal at these settings"
    return {
        "population_size": P, "seeds_per_member": [t.seeds for t in config.tasks], "pairs_probed": k,
        "repeats": repeats, "devices": devices, "tasks": per_task, "combined": combined,
        "effective_pairs": (P // 2) * sf, "verdict": verdict(sf),
        "advice": advice,
    }
