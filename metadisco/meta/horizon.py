"""Where a horizon-aware objective will extrapolate: the run length N (updates per training run) of every validation
and held-out env, against the range of N its training tasks cover.

TA-LPO's drift sees log N (`TALPODrift(horizon=True)`). Meta-training shows the drift only the N of its training
tasks, which on a CPU recipe are short (`discover_cpu.yaml`: N = 24-48), while evaluation envs bring their own
(Pendulum-v1 @ 200k: N = 390), so the network is read at inputs no member was ever scored at. Campaign 9
(results/discovery/) dropped the input for this reason; that alone did not make its drift transfer. This module
only says where the extrapolation happens; whether it hurts is an experiment.

A piece that reads `Progress.num_updates` says so with `sees_horizon = True` (see `objectives.registry.Piece`).
"""

from __future__ import annotations

from metadisco.objectives import Objective


def sees_horizon(objective: Objective) -> bool:
    """Whether any piece of `objective` reads the run length N (not only the progress n / N)."""
    return any(piece.sees_horizon for piece in objective.pieces().values())


def _num_updates(env: str, preset, train, timesteps, algorithm: str) -> int:
    from metadisco.runs.seeds import resolve_config

    return resolve_config(env, preset, train, timesteps, algorithm).num_updates


def outside_training_horizons(config) -> tuple[tuple[int, int], list[tuple[str, int]]]:
    """((lowest, highest) N of the training tasks, [(validation or held-out 'ENV@TIMESTEPS', its N) outside that
    range]) for a meta-training config. Held-out envs are counted at their family's preset, as `evaluate` runs
    them without `--set`."""
    from metadisco.envs import split_budget

    algorithm = config.objective.algorithm
    trained = [_num_updates(t.env, t.preset, t.train, steps, algorithm) for t in config.tasks for steps in t.lifetimes]
    low, high = min(trained), max(trained)
    others = [(t.env, t.preset, t.train, steps) for t in config.validation.tasks for steps in t.lifetimes]
    for spec in config.held_out_envs:
        env, budget = split_budget(spec)
        others.append((env, None, {}, budget))
    outside = []
    for env, preset, train, steps in others:
        n = _num_updates(env, preset, train, steps, algorithm)
        if not low <= n <= high:
            outside.append((f"{env}@{steps}" if steps else env, n))
    return (low, high), outside


def horizon_note(config) -> str | None:
    """One line for the researcher when the objective sees N and an evaluation env's N is outside the training
    tasks' range; None otherwise."""
    if not sees_horizon(config.objective):
        return None
    (low, high), outside = outside_training_horizons(config)
    if not outside:
        return None
    envs = ", ".join(f"{name} (N = {n})" for name, n in outside)
    trained = f"{low}" if low == high else f"{low}-{high}"
    return (f"note: the objective sees the run length N (updates per run), which is {trained} on the training "
            f"tasks; it will extrapolate on {envs}. A drift with `horizon: false` sees the progress n / N only")
