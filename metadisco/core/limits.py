"""Bounds on sizes that drive allocation, derived from this machine's memory.

Seeds, env counts, rollout lengths, network widths, populations and update counts all become array sizes. A
number far too large (`--seeds 1e9`, `hidden: 2000000000`) would otherwise try to allocate tens of GB or
more, or overflow inside jit. The estimates here are *lower bounds* of what the work needs (an observation of
one float, no activations, no XLA temporaries), so a refusal is certain to be right: the work could not fit,
and the message says how much it needs and how much there is.
"""

from __future__ import annotations

import os

from metadisco.core.errors import UserError

FLOAT_BYTES = 4
# A rollout stores per step and env at least obs, final_obs, action, log_prob, value, reward, terminated and
# truncated: 8 values (with a one-float observation).
ROLLOUT_VALUES_PER_STEP = 8
METRIC_VALUES_PER_UPDATE = 8  # the most of any algorithm's Metrics: PPO's 3 episode fields, 3 losses, 2 diagnostics
# Agent parameters live as parameters, gradients and two Adam moments.
PARAM_COPIES = 4
# Meta-parameters per objective piece: a learned piece of LPO size has about 1e3, a learned optimiser 1e3,
# a learned value loss 4e3. 2**24 float32s is 64 MiB per copy, and the ES keeps a copy per population member
# plus its own state, so a piece beyond this cannot be meta-trained in any memory metadisco runs in.
MAX_META_PARAMETERS = 2**24


def available_bytes() -> int:
    """Physical memory of this machine (host RAM): an upper bound on what one process can allocate."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not every platform names these
        return 2**40


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def network_parameters(hidden_sizes: tuple[int, ...]) -> int:
    """A lower bound on an actor-critic's parameter count: two MLPs from one input to one output."""
    sizes = (1, *hidden_sizes, 1)
    return 2 * sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True))


def trainer_bytes(config, runs: int) -> int:
    """A lower bound on the memory of `runs` vmapped training runs of `config` (a TrainConfig)."""
    rollout = config.num_envs * config.num_steps * ROLLOUT_VALUES_PER_STEP
    metrics = config.num_updates * METRIC_VALUES_PER_UPDATE
    params = network_parameters(config.hidden_sizes) * PARAM_COPIES
    return runs * (rollout + metrics + params) * FLOAT_BYTES


def check_trainer_fits(config, runs: int, what: str) -> None:
    """Refuse, before any work, `runs` training runs of `config` that cannot fit in this machine's memory.

    `what` names the numbers that set `runs` (e.g. "--seeds 1000000000"), for the message."""
    need = trainer_bytes(config, runs)
    have = available_bytes()
    if need > have:
        raise UserError(
            f"{what} with {config.num_envs} envs x {config.num_steps} steps, {config.num_updates:,} updates and "
            f"hidden sizes {list(config.hidden_sizes)} needs at least {human_bytes(need)} of memory "
            f"({runs:,} runs at {human_bytes(need / runs)} each, rollouts, metrics and network alone); this "
            f"machine has {human_bytes(have)}: use fewer seeds, envs, steps, updates or smaller networks")


def check_meta_parameters(count: int, what: str) -> None:
    """Refuse an objective piece with more than `MAX_META_PARAMETERS` meta-parameters."""
    if count > MAX_META_PARAMETERS:
        raise UserError(
            f"{what} has {count:,} meta-parameters ({human_bytes(count * FLOAT_BYTES)} as float32); at most "
            f"{MAX_META_PARAMETERS:,} ({human_bytes(MAX_META_PARAMETERS * FLOAT_BYTES)}) are allowed, since "
            "the ES keeps a copy per population member: use smaller hidden sizes")


def check_population_fits(population: int, meta_parameters: int, what: str) -> None:
    """Refuse a population whose meta-parameters alone (members, ES mean and moments) cannot fit in memory."""
    need = (population + 4) * max(meta_parameters, 1) * FLOAT_BYTES
    have = available_bytes()
    if need > have:
        raise UserError(
            f"{what}: {population:,} members x {meta_parameters:,} meta-parameters need at least "
            f"{human_bytes(need)} of memory; this machine has {human_bytes(have)}: use a smaller population")
