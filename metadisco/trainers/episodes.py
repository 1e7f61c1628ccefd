"""What a trainer logs of the episodes that end during a rollout: sums per step, then per-update averages
over finished episodes only (never over all steps: an episode still running has no return yet)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from metadisco.envs import EnvStep


class EpisodeSums(NamedTuple):
    """Of one vectorised step (stacked [T] over a rollout by `lax.scan`)."""

    return_sum: jax.Array  # sum of the returns of the episodes that ended
    count: jax.Array  # episodes that ended
    truncations: jax.Array  # of those, cut by a time limit
    achievements: jax.Array | None  # [num_achievements] sums (Craftax), None where the env reports none


def step_sums(out: EnvStep) -> EpisodeSums:
    """The episodes that ended at this step of `out` (after `LogEpisodes`, which adds `episode_return`)."""
    done = jnp.logical_or(out.terminated, out.truncated)
    achievements = jnp.sum(out.info["achievements"], axis=0) if "achievements" in out.info else None
    return EpisodeSums(jnp.sum(jnp.where(done, out.info["episode_return"], 0.0)), jnp.sum(done),
                       jnp.sum(out.truncated), achievements)


def update_metrics(sums: EpisodeSums) -> dict[str, jax.Array]:
    """A rollout's [T] sums -> the episode fields of `Metrics`: mean return of finished episodes (NaN if none),
    their count, truncations, and the fraction of them that unlocked each achievement (NaN if none ended)."""
    count = jnp.sum(sums.count)
    out = {"episode_return": jnp.where(count > 0, jnp.sum(sums.return_sum) / jnp.maximum(count, 1), jnp.nan),
           "episode_count": count, "truncation_count": jnp.sum(sums.truncations)}
    if sums.achievements is not None:
        out["achievements"] = jnp.where(count > 0, jnp.sum(sums.achievements, axis=0) / jnp.maximum(count, 1),
                                        jnp.nan)
    return out
