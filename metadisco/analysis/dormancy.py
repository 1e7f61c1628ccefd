"""The dormant-unit fraction over training, of an objective's optimiser and of Adam on the same seeds (Goldie et
al., "Can Learned Optimization Make Reinforcement Learning Less Difficult?", NeurIPS 2024, whose OPEN is meant to
keep units from going dormant; the definition is its code's, AlexGoldie/rl-learned-optimization `train.py`
`calc_dormancy`, after Sokar et al.'s tau-dormant neurons, ICML 2023).

A unit's dormancy is its mean |activation| over a minibatch divided by the mean over its layer's units (OPEN's
input feature, `metadisco.objectives.open_optimizer.dormancy`); the unit is dormant when that is below tau, OPEN's
tau = 1e-7, which in a ReLU network counts the units that are exactly 0 on the whole minibatch. As OPEN counts,
every parameter tensor counts its layer's units once (a layer's kernel and bias twice, a one-unit head or the
log-std once, never dormant), and the fraction is dormant entries over all entries.

How it is recorded: the optimiser is wrapped (`DormancyRecorder`) in a piece that asks the PPO trainer for its
`OptimizerContext` (the loss's activations per minibatch, the seam OPEN itself reads) and adds each step's
fraction into its state, one slot per update; the wrapped optimiser's updates are returned unchanged, and the
minibatch permutations are those drawn without the context, so Adam wrapped trains as Adam (to float rounding).
A value per update is the mean over its epochs x minibatches (OPEN logs one per minibatch).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from metadisco.objectives import OPTIMIZERS, Objective
from metadisco.objectives.open_optimizer import dormancy
from metadisco.objectives.registry import OptimizerContext, OptimizerInputs, Piece, Progress

TAU = 1e-7  # OPEN's train.py calc_dormancy(tensor_activations, tau=1e-7)


def dormant_fraction(activations: Any, tau: float = TAU) -> jax.Array:
    """Fraction of dormant units: `activations` a pytree of [units] leaves (each a layer's mean |activation| per
    unit, one leaf per parameter tensor as `OptimizerContext.activations` has them) -> scalar in [0, 1]."""
    leaves = jax.tree.leaves(activations)
    if not leaves:
        raise ValueError("dormant_fraction: no activations (an empty pytree)")
    dormant = sum(jnp.sum(dormancy(a) < tau) for a in leaves)
    return dormant / sum(a.shape[-1] for a in leaves)


class RecorderState(NamedTuple):
    inner: Any  # the wrapped optimiser's state
    fractions: jax.Array  # [num_updates] float32: sum over the update's steps of fraction / steps_per_update
    count: jax.Array  # int32: optimiser steps taken


@dataclass(frozen=True)
class DormancyRecorder(Piece):
    """`inner` (any optimiser piece) that also records the dormant-unit fraction of every step's minibatch, for
    `num_updates` updates of `steps_per_update` optimiser steps (epochs x minibatches). Not registered: an
    analysis tool, never part of an objective file."""

    inner: Piece = None
    num_updates: int = 1
    steps_per_update: int = 1
    tau: float = TAU
    needs_context = True

    @property
    def name(self) -> str:
        return self.inner.name

    def zero_meta(self):
        return self.inner.zero_meta()

    def __call__(self, meta, inputs: OptimizerInputs, progress: Progress) -> optax.GradientTransformationExtraArgs:
        inner = self.inner(meta, inputs, progress)
        wants_context = bool(getattr(self.inner, "needs_context", False))
        num_updates, per_update, tau = self.num_updates, self.steps_per_update, self.tau

        def init(params):
            return RecorderState(inner.init(params), jnp.zeros((num_updates,), jnp.float32), jnp.int32(0))

        def update(grads, state: RecorderState, params=None, *, context: OptimizerContext | None = None, **extra):
            if context is None:
                raise ValueError("DormancyRecorder needs the trainer's OptimizerContext (algorithm ppo)")
            kwargs = {"context": context} if wants_context else {}
            updates, inner_state = inner.update(grads, state.inner, params, **kwargs, **extra)
            # Past the last update (a caller stepping further) the slot index is clipped: never out of bounds.
            slot = jnp.minimum(state.count // per_update, num_updates - 1)
            fraction = dormant_fraction(context.activations, tau).astype(jnp.float32)
            fractions = state.fractions.at[slot].add(fraction / per_update)
            return updates, RecorderState(inner_state, fractions, state.count + 1)

        return optax.GradientTransformationExtraArgs(init, update)


def dormancy_runs(objective: Objective, meta: Any, env_id: str, timesteps: int | None, seeds: int,
                  seed: int = 0) -> dict:
    """Train `objective` and the same objective with Adam in its optimiser slot, on `env_id`'s preset (PPO),
    `seeds` seeds from `seed` (the same keys for both), recording the dormant fraction per update.

    Returns {"config": TrainConfig, "runs": {label: {"dormant": [seeds, N], "episode_return": [seeds, N]}}}
    (labels: the optimiser's name, and "adam")."""
    from metadisco.envs import make_env
    from metadisco.runs.seeds import resolve_config, seed_keys
    from metadisco.trainers import make_trainer

    config = resolve_config(env_id, timesteps=timesteps, algorithm=objective.algorithm)
    from metadisco.trainers.algorithm import get_algorithm

    if not get_algorithm(config.algorithm).gives_activations:
        raise ValueError(f"dormancy_runs: algorithm {config.algorithm!r} gives no optimiser the network's "
                         "activations (`Algorithm.gives_activations`)")
    env = make_env(env_id)
    keys = seed_keys(seeds, seed)
    entries = {objective.optimizer.name: (objective.optimizer, meta["optimizer"])}
    entries.setdefault("adam", (OPTIMIZERS.make("adam"), {}))
    runs = {}
    for label, (piece, piece_meta) in entries.items():
        steps_per_update = config.options.update_epochs * config.options.num_minibatches
        recorder = DormancyRecorder(piece, config.num_updates, steps_per_update)
        wrapped = dataclasses.replace(objective, optimizer=recorder)
        run_meta = {**meta, "optimizer": piece_meta}
        trainer = make_trainer(config, env, wrapped)

        def one(key, m, trainer=trainer):
            state, metrics = trainer.step(trainer.init(key, m), trainer.num_updates)
            return state.opt_state.fractions, metrics.episode_return

        fractions, returns = jax.jit(jax.vmap(one, in_axes=(0, None)))(keys, run_meta)
        runs[label] = {"dormant": np.asarray(fractions), "episode_return": np.asarray(returns)}
    return {"config": config, "runs": runs}
