"""Run a leaderboard: every entry of a suite on every env of it, each tuned the same way, as resumable cells; the
board (table, statistics, figures) computed from the cells alone.

    board = Board(load_suite("cpu"), suite_entries(suite.entries), "out/", devices)
    board.run()                         # trains the missing cells, entry by entry (the reference first)
    report = board.report()             # {"suite", "entries", "envs", "aggregate", "improvement", "profiles"}

Protocol, per env and entry: the entry's algorithm's preset for the env family (with the entry's own `train`
settings) at the suite's env steps; its learning rate tuned over `Suite.lr_scales` x its preset lr, each point
trained on the selection seeds; the best point (`metadisco.core.stats.best_point`: most scored seeds, then the
highest mean of the suite's score) trained again on the report seeds, whose scores are the board's. Every entry
is trained alone, one compiled call per (env, seed set, lr), with the same seed keys as every other entry: a cell
depends only on its entry, env, seed set and lr, so an entry added later (`--add`) is trained without retraining
the others, and an entry added twice gets the same bits.

A cell's key is `ENV|ENTRY|SEED_SET|lr=VALUE`; its record holds the entry's identity (objective spec, digest of its
meta-parameters) and the trainer config, so a cell made by another version of an entry is refused, not mixed in.

Statistics (`metadisco.core.stats`, rliable's definitions; Agarwal et al., NeurIPS 2021): per env each report
seed's score is normalised between the random policy's return (0) and the tuned reference's mean (1, the suite's
first entry; an env where the reference does not beat the random policy has no unit and is left out of that score's
aggregate); a seed with no finite score (diverged, or no episode finished) counts as the random policy's. Across
envs: the IQM with a stratified-bootstrap 95% CI, the optimality gap, performance profiles, and P(row > column)
over the envs both ran, with a CI against the reference.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from metadisco.core import stats
from metadisco.core.cells import CellStore, tree_digest
from metadisco.core.errors import UserError
from metadisco.leaderboard.entries import Entry
from metadisco.leaderboard.suite import SCORES, Suite

SEED_SETS = ("select", "score")
PROFILE_TAUS = tuple(float(t) for t in np.linspace(0.0, 2.0, 41))


@dataclass(frozen=True)
class Slot:
    """One entry on one env: its method and config, or why it cannot run there (`reason`)."""

    env: str
    steps: int
    entry: Entry
    method: object | None  # metadisco.evaluate.methods.Method
    config: object | None  # TrainConfig at the preset lr
    reason: str | None = None
    lrs: tuple[float, ...] = ()  # the suite's lr grid around the config's preset lr


def cell_key(env: str, entry: str, seed_set: str, lr: float) -> str:
    return f"{env}|{entry}|{seed_set}|lr={float(np.float32(lr))!r}"


class Board:
    """A suite's board in `out` (see the module docstring). `against`: another board's directory whose cells are
    read (never written) for the entries it holds, so that only the others train."""

    def __init__(self, suite: Suite, entries: list[Entry], out: str | Path | None, devices, against=None,
                 write: bool = True):
        import jax

        from metadisco.evaluate.methods import Method, method_from

        if suite.reference not in [e.name for e in entries]:
            raise UserError(f"the board needs its reference entry {suite.reference!r} (tuned {suite.reference} = 1)")
        self.suite, self.entries, self.devices = suite, entries, list(devices or jax.local_devices())
        self.methods: dict[str, Method | None] = {}
        self._identities: dict[tuple, dict] = {}
        self.missing: dict[str, str] = {}
        for entry in entries:
            missing = entry.missing()
            if missing:
                self.missing[entry.name] = missing
                self.methods[entry.name] = None
                continue
            m = method_from(entry.location())
            self.methods[entry.name] = Method(entry.name, entry.source, m.objective, m.meta)
        self.stores = []
        if out is not None:
            self.stores.append(self._store(Path(out), write))
        if against is not None:
            if not (Path(against) / "cells" / "plan.json").is_file():
                raise UserError(f"--against {str(against)!r} holds no leaderboard cells (no cells/plan.json); give "
                                "the directory of a board of this suite")
            self.stores.append(self._store(Path(against), False))
        self.slots = {(env, e.name): self._slot(env, steps, e) for env, steps in suite.envs for e in entries}

    def _store(self, directory: Path, write: bool) -> CellStore:
        """The cells of the board in `directory`, whose plan must be this suite's on this device count."""
        from metadisco.core.cells import first_difference
        from metadisco.core.io import read_json
        from metadisco.runs.migrate import upgrade_records

        settings = {**self.suite.to_plain(), "devices": len(self.devices)}
        plan = directory / "cells" / "plan.json"
        if plan.is_file():
            stored = read_json(plan)
            difference = first_difference(upgrade_records(stored.get("settings")) if isinstance(stored, dict) else None,
                                          settings)
            if difference:
                raise UserError(f"{str(directory)!r} holds a board of another suite or device count ({difference}); "
                                "give another directory, or the suite and --devices it was made with")
        return CellStore(directory / "cells", settings, True, "leaderboard", write=write, output=directory,
                         upgrade=upgrade_records)

    # ---- the plan

    def _slot(self, env: str, steps: int, entry: Entry) -> Slot:
        from metadisco.core.limits import check_trainer_fits
        from metadisco.envs import make_env
        from metadisco.evaluate.training import Training
        from metadisco.trainers import make_trainer
        from metadisco.trainers.hyper import static_of

        method = self.methods[entry.name]
        if method is None:
            return Slot(env, steps, entry, None, None, self.missing[entry.name])
        try:
            training = Training(timesteps=steps, overrides=dict(entry.train))
            config = training.config(env, steps, method.objective.algorithm)
            config = replace(config, eval_episodes=self.suite.eval_episodes)
            check_trainer_fits(config, max(self.suite.selection_seeds, self.suite.report_seeds), f"suite {env}")
            make_trainer(static_of(config), make_env(env), method.objective)  # builds, compiles nothing
        except UserError as e:
            return Slot(env, steps, entry, method, None, str(e))
        return Slot(env, steps, entry, method, config, None, tuple(self.suite.grid(config.lr)))

    def identity(self, slot: Slot, lr: float) -> dict:
        """What a cell of `slot` at `lr` was trained from: a stored cell must match it (computed once per cell: the
        meta-parameters' digest is not free, and the board reads each cell many times)."""
        key = (slot.env, slot.entry.name, lr)
        if key not in self._identities:
            self._identities[key] = self._identity(slot, lr)
        return self._identities[key]

    def _identity(self, slot: Slot, lr: float) -> dict:
        from metadisco.trainers.config import config_to_dict
        from metadisco.trainers.hyper import with_values

        return {"spec": slot.method.objective.to_spec(), "meta": tree_digest(slot.method.meta),
                "config": config_to_dict(with_values(slot.config, {"lr": lr}, "the suite's lr grid"))}

    def _get(self, slot: Slot, seed_set: str, lr: float) -> dict | None:
        from metadisco.runs.migrate import upgrade_records

        key = cell_key(slot.env, slot.entry.name, seed_set, lr)
        for store in self.stores:
            record = store.get(key)
            if record is not None:
                if upgrade_records(record.get("identity")) != self.identity(slot, lr):
                    raise UserError(f"cell {key!r} in {store.directory} was trained from another version of entry "
                                    f"{slot.entry.name!r} (its objective or settings differ); move that cell away to "
                                    "retrain it, or name the new version otherwise")
                return record
        return None

    def wanted(self, slot: Slot) -> list[tuple[str, float]]:
        """The (seed set, lr) cells `slot` still needs, as far as the cells held so far tell (the score cell's lr is
        known once every selection cell is)."""
        if slot.config is None:
            return []
        need = [("select", lr) for lr in slot.lrs if self._get(slot, "select", lr) is None]
        if need:
            return need + [("score", math.nan)]
        lr = self.chosen(slot)
        return [] if self._get(slot, "score", lr) is not None else [("score", lr)]

    def records(self, slot: Slot) -> list[dict]:
        """The cells of `slot` held so far."""
        if slot.config is None:
            return []
        found = [self._get(slot, "select", lr) for lr in slot.lrs]
        found += [self._get(slot, "score", lr) for lr in slot.lrs]
        return [r for r in found if r is not None]

    def chosen(self, slot: Slot) -> float:
        from metadisco.evaluate.rules import chosen_point

        return slot.lrs[chosen_point([_score(self._get(slot, "select", lr)["run"], self.suite.score)
                                      for lr in slot.lrs])]

    # ---- training

    def run(self, only: list[str] | None = None, say=None) -> None:
        """Train every missing cell (of the entries named in `only`, default all), the reference first, then entry
        by entry; each cell is written as its call finishes. `say`: a callable given one line per trained call."""
        order = sorted(self.entries, key=lambda e: e.name != self.suite.reference)
        for entry in order:
            if only is not None and entry.name not in only:
                continue
            for env, _ in self.suite.envs:
                slot = self.slots[(env, entry.name)]
                while wanted := self.wanted(slot):
                    seed_set, lr = wanted[0]
                    self._train(slot, seed_set, lr, say)

    def _keys(self, seed_set: str):
        from metadisco.evaluate import selection_keys
        from metadisco.runs.seeds import seed_keys

        if seed_set == "select":
            return selection_keys(self.suite.selection_seeds, self.suite.seed)
        return seed_keys(self.suite.report_seeds, self.suite.seed)

    def _train(self, slot: Slot, seed_set: str, lr: float, say) -> None:
        from metadisco.evaluate.runner import train_group
        from metadisco.trainers.hyper import with_values

        if not self.stores or not self.stores[0].write:
            raise UserError("this board has no --out to write cells to")
        started = time.perf_counter()
        config = with_values(slot.config, {"lr": lr}, "the suite's lr grid")
        run = train_group(slot.env, [slot.method], config, self._keys(seed_set), self.devices)[slot.entry.name]
        self.stores[0].put(cell_key(slot.env, slot.entry.name, seed_set, lr),
                           {"identity": self.identity(slot, lr), "run": scores_record(run)})
        if say is not None:
            say(f"leaderboard: {slot.entry.name} on {slot.env} ({seed_set} seeds, lr {lr:.3g}) trained in "
                f"{time.perf_counter() - started:.0f} s")

    # ---- the board

    def status(self, slot: Slot) -> str:
        """'done', 'cannot run: ...', or 'k of n cells'."""
        if slot.reason is not None:
            return f"cannot run: {slot.reason}"
        left = self.wanted(slot)
        return "done" if not left else f"{len(slot.lrs) + 1 - len(left)} of {len(slot.lrs) + 1} cells"

    def _report_run(self, slot: Slot):
        if slot.config is None or self.wanted(slot):
            return None
        lr = self.chosen(slot)
        return lr, self._get(slot, "score", lr)["run"]

    def report(self) -> dict:
        """The board as plain data, from the cells alone (entries not done on every env they can run are listed,
        not ranked)."""
        from metadisco.runs.random_policy import cached_random_return

        suite, ref = self.suite, self.suite.reference
        scores = [s for s in SCORES if s != "eval_return" or suite.eval_episodes]
        envs, normalised = {}, {s: {} for s in scores}  # normalised[score][entry][env] = [report seeds]
        for env, steps in suite.envs:
            random = float(cached_random_return(env, seed=suite.seed))
            runs = {e.name: self._report_run(self.slots[(env, e.name)]) for e in self.entries}
            reference = {}
            if runs[ref] is not None:
                for s in scores:
                    ok = stats.finite(_score(runs[ref][1], s))
                    reference[s] = float(ok.mean()) if ok.size else None
            per_entry = {}
            for e in self.entries:
                slot = self.slots[(env, e.name)]
                row = {"status": self.status(slot), "held_out": e.held_out(env)}
                if runs[e.name] is not None:
                    lr, run = runs[e.name]
                    row.update(lr=lr, preset_lr=float(slot.config.lr), seconds=float(run["seconds"]), scores={})
                    for s in scores:
                        raw = _score(run, s)
                        block = {"mean": _mean(raw), "finite_seeds": int(np.isfinite(raw).sum()),
                                 "seeds": [float(x) if np.isfinite(x) else None for x in raw]}
                        if reference.get(s) is not None and reference[s] > random:  # else no unit: the env is left out
                            n = np.nan_to_num(stats.normalise(raw, random, reference[s]), nan=0.0)
                            normalised[s].setdefault(e.name, {})[env] = n
                            block["normalised_iqm"] = float(stats.iqm(n))
                        row["scores"][s] = block
                per_entry[e.name] = row
            envs[env] = {"steps": steps, "random_return": random, "reference": reference, "entries": per_entry}
        ranked = [e.name for e in self.entries if all(
            envs[env]["entries"][e.name]["status"] in ("done",) or
            envs[env]["entries"][e.name]["status"].startswith("cannot run") for env, _ in suite.envs)
            and e.name in normalised[suite.score]]
        aggregate, improvement, profiles = {}, {}, {}
        for s in scores:
            by = {name: normalised[s].get(name, {}) for name in ranked}
            aggregate[s] = {name: _aggregate(by[name], by.get(ref, {}), entry_seed(suite, name)) for name in ranked
                            if by[name]}
            improvement[s] = {a: {b: _improvement(by[a], by[b]) for b in aggregate[s]} for a in aggregate[s]}
            profiles[s] = {"taus": list(PROFILE_TAUS),
                           **{name: stats.performance_profile(list(by[name].values()), PROFILE_TAUS).tolist()
                              for name in aggregate[s]}}
        order = sorted(aggregate[suite.score], key=lambda n: -aggregate[suite.score][n]["iqm"])
        entries = {e.name: {"source": e.source, "what": e.what, "trained_on": list(e.trained_on),
                            "train": dict(e.train), **({"missing": self.missing[e.name]} if e.name in self.missing
                                                       else {}),
                            "rank": order.index(e.name) + 1 if e.name in order else None} for e in self.entries}
        return {"suite": {**suite.to_plain(), "summary": suite.summary, "reference": ref,
                          "devices": len(self.devices)},
                "entries": entries, "envs": envs, "aggregate": aggregate, "improvement": improvement,
                "profiles": profiles}


def per_env_improvement(report: dict, a: str, b: str, score: str | None = None) -> dict[str, dict]:
    """{env: {"p", "ci95"}}: P(a > b) on each env both ran, on the report seeds' raw scores (a seed with no score
    loses), with a bootstrap 95% CI; from a board's report alone (board.json)."""
    score = score or report["suite"]["score"]
    out = {}
    for env, block in report["envs"].items():
        rows = [block["entries"][n].get("scores", {}).get(score) for n in (a, b)]
        if all(r is not None for r in rows):
            x, y = (np.array([np.nan if v is None else v for v in r["seeds"]]) for r in rows)
            p, ci = stats.aggregate_probability_of_improvement([(x, y)], seed=report["suite"]["seed"])
            out[env] = {"p": p, "ci95": list(ci) if ci else None}
    return out


def entry_seed(suite: Suite, name: str) -> int:
    """The bootstrap's seed for one entry's CIs: fixed by the suite and the entry, so a board's figures repeat."""
    import zlib

    return (suite.seed + zlib.crc32(name.encode())) % 2**31


def scores_record(run) -> dict:
    """A cell's record of a trained `MethodRun`: its [seeds] scores, exact, and what it cost; not its learning curves
    (an off-policy trainer logs one point per env step: megabytes a cell)."""
    from metadisco.core.cells import pack_array

    return {"final_return": pack_array(run.final_return), "mean_return": pack_array(run.mean_return),
            "eval_return": None if run.eval_return is None else pack_array(run.eval_return),
            "diverged": pack_array(run.diverged), "key_data": pack_array(run.key_data), "seconds": run.seconds}


def _score(record: dict, score: str) -> np.ndarray:
    """The [seeds] `score` of a cell's record (NaN where it was not recorded)."""
    from metadisco.core.cells import unpack_array

    if record.get(score) is None:
        return np.full(unpack_array(record["final_return"]).shape, np.nan)
    return np.asarray(unpack_array(record[score]), np.float64)


def _mean(x) -> float | None:
    ok = stats.finite(x)
    return float(ok.mean()) if ok.size else None


def _aggregate(by_env: dict, reference: dict, seed: int) -> dict:
    strata = list(by_env.values())
    pooled = np.concatenate(strata)
    ci = stats.stratified_iqm_ci(strata, seed=seed)
    shared = [env for env in by_env if env in reference]
    p, p_ci = stats.aggregate_probability_of_improvement([(by_env[e], reference[e]) for e in shared], seed=seed) \
        if shared else (None, None)
    return {"iqm": float(stats.iqm(pooled)), "ci95": list(ci) if ci else None,
            "optimality_gap": stats.optimality_gap(pooled), "envs": len(strata),
            "p_vs_reference": p, "p_vs_reference_ci95": list(p_ci) if p_ci else None}


def _improvement(a: dict, b: dict) -> float | None:
    shared = [env for env in a if env in b]
    if not shared:
        return None
    return float(np.mean([stats.probability_of_improvement(a[e], b[e]) for e in shared]))


def print_line(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
