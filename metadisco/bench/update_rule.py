"""`metadisco bench --update-rule`: the throughput of the learned update rule's trainer
(`metadisco.trainers.update_rule` with DiscoRL's agent and Disco103's meta-network) and how much of its time is the
agent's network.

Per case and seed count:

- `trainer_steps_per_second` (env steps) and `learner_steps_per_second` (updates, each one learner step on
  `replay_batch` trajectories), the trainer as `metadisco train` runs it (`metadisco.runs.seeds.seeds_program`:
  seeds sharded over the devices, vmapped on each);
- `network_only_steps_per_second`: the same number of learner steps of the agent's network alone, on batches of the
  same shape: its forward pass under the parameters and under the target parameters and one backward pass through
  what Disco103's loss reads, what any learner of this agent pays whatever targets it is given;
  `trainer_over_network_only` is how many times that time the trainer takes (the rest: acting, the replay, the
  meta-network, the rule's value estimates and its loss). The network alone runs vmapped on one device; with more
  seeds than one the trainer's are sharded over every device, so the ratio is then not like for like on a CPU.

The meta-parameters are zero: the work does not depend on their values, so no weights file is needed and the
figures hold for Disco103's. Cases: Catch-bsuite at `update_rule_classic` (DeepMind's eval-notebook settings: 2
envs x 29 steps an update, 64 trajectories a learner step) and SpaceInvaders-MinAtar at `update_rule_minatar` (16
envs an update), each for a few updates, every update a learner step (the trainer computes the step while the
replay fills, and keeps it only once it holds a batch, so the cost per update is the same from the first).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp

from metadisco.bench.train import timed
from metadisco.envs import make_env
from metadisco.objectives import Objective
from metadisco.objectives.registry import UPDATE_RULES
from metadisco.runs.seeds import seeds_program
from metadisco.trainers.config import TrainConfig, get_preset


@dataclass(frozen=True)
class RuleCase:
    env_id: str
    preset: str
    updates: int


DEFAULT_RULE_CASES = (RuleCase("Catch-bsuite", "update_rule_classic", 100),
                      RuleCase("SpaceInvaders-MinAtar", "update_rule_minatar", 40))


def rule_config(case: RuleCase) -> TrainConfig:
    config = get_preset(case.preset)
    return replace(config, total_timesteps=case.updates * config.num_envs * config.num_steps).validate()


def network_only_fn(env_id: str, config: TrainConfig, rule, num_seeds: int):
    """A function keys [num_seeds] -> a scalar per seed that runs `config.num_updates` learner steps of the agent's
    network alone: forward under the target parameters and under the parameters (with random actions taken, so
    that DiscoRL's agent also gives its heads at those actions), one backward pass through what the rule's loss
    reads (logits, y and the heads at the actions taken, weighted by the target's outputs so that all of those
    stay live), and a step of the parameters along the gradient (each step depends on the last, as in training)."""
    env = make_env(env_id)
    num_actions = env.spec.action_size
    network = rule.agent(num_actions, config.hidden_sizes, config.activation)
    shape = (config.num_steps, config.options.replay_batch)

    def run(key):
        init_key, obs_key, action_key = jax.random.split(key, 3)
        obs = jax.random.normal(obs_key, shape + tuple(env.spec.obs_shape))
        actions = jax.random.randint(action_key, shape, 0, num_actions)
        params = network.init(init_key, obs[:1, :1])

        def learner_step(carry, _):
            params, target = carry
            target_out = network.apply(target, obs)

            def read(p):
                out = network.apply(p, obs, actions)
                return (jnp.vdot(out["logits"], target_out["logits"]) + jnp.vdot(out["y"], target_out["y"])
                        + sum(jnp.vdot(v, target_out[name].mean(axis=-2)) for name, v in out["acted"].items()))

            grads = jax.grad(read)(params)
            new = jax.tree.map(lambda p, g: p - 1e-9 * g, params, grads)
            return (new, jax.tree.map(lambda t, p: 0.9 * t + 0.1 * p, target, params)), None

        (params, _), _ = jax.lax.scan(learner_step, (params, params), None, config.num_updates)
        return sum(jnp.sum(x) for x in jax.tree.leaves(params))

    return jax.vmap(run)


def bench_update_rule(cases=DEFAULT_RULE_CASES, seed_counts=(1, 4)) -> dict:
    """The figures of the module docstring for DiscoRL's rule (the network-only program reads its agent's "acted"
    heads), {"rule": "disco", "cases": {env id: {preset, sizes, seeds_N: {...}}}}."""
    rule = UPDATE_RULES.make("disco")
    objective = Objective(update_rule=rule)
    meta = objective.zero_meta()
    out = {"rule": "disco", "cases": {}}
    for case in cases:
        config = rule_config(case)
        figures = {"preset": case.preset, "updates": config.num_updates, "num_envs": config.num_envs,
                   "num_steps": config.num_steps, "replay_batch": config.options.replay_batch,
                   "hidden_sizes": list(config.hidden_sizes)}
        for n in seed_counts:
            trainer, args, devices = seeds_program(case.env_id, objective, meta, config, n)
            compile_s, run_s = timed(trainer, *args)
            _, network_s = timed(network_only_fn(case.env_id, config, rule, n), jax.random.split(jax.random.key(0), n))
            updates = n * config.num_updates
            figures[f"seeds_{n}"] = {
                "trainer_devices": len(devices),
                "trainer_steps_per_second": updates * config.num_envs * config.num_steps / run_s,
                "learner_steps_per_second": updates / run_s,
                "network_only_steps_per_second": updates / network_s,
                "trainer_over_network_only": run_s / network_s,
                "trainer_compile_seconds": compile_s,
            }
        out["cases"][case.env_id] = figures
    return out
