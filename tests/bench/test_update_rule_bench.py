"""`metadisco bench --update-rule` (`bench.update_rule`): the update-rule trainer's throughput beside its agent's
network alone. The figures' bookkeeping and the network-only program are checked here at two updates; the speeds
themselves are what running the benchmark measures."""

import math
from dataclasses import replace

import jax
import jax.numpy as jnp
import pytest

from metadisco.bench.update_rule import RuleCase, bench_update_rule, network_only_fn, rule_config
from metadisco.objectives.registry import UPDATE_RULES
from metadisco.trainers.config import apply_overrides

CASE = RuleCase("Catch-bsuite", "update_rule_classic", 2)


def test_a_case_runs_the_preset_for_its_updates():
    config = rule_config(CASE)
    assert config.num_updates == 2 and config.options.replay_batch == 64 and tuple(config.hidden_sizes) == (512, 512)


@pytest.mark.slow  # 16 s on 2 cores
def test_the_network_only_program_moves_the_parameters_each_step():
    """Its steps depend on each other (else XLA could drop all but the last): one step and two give different
    parameters, every seed its own."""
    small = apply_overrides(rule_config(CASE), {"hidden_sizes": (8,), "replay_batch": 2, "num_steps": 3})
    rule = UPDATE_RULES.make("disco")
    keys = jax.random.split(jax.random.key(0), 2)
    one, two = (network_only_fn(CASE.env_id, replace(small, total_timesteps=6 * n), rule, 2)(keys) for n in (1, 2))
    assert one.shape == (2,) and bool(jnp.all(jnp.isfinite(one)))
    assert one[0] != one[1] and bool(jnp.all(one != two))


@pytest.mark.heavy
@pytest.mark.slow  # about 40 s on 2 cores: the trainer and the network-only program compile once each
def test_the_figures_are_one_measurement_each():
    figures = bench_update_rule((CASE,), seed_counts=(1,))
    case = figures["cases"]["Catch-bsuite"]
    assert figures["rule"] == "disco" and case["updates"] == 2 and case["num_envs"] == 2 and case["num_steps"] == 29
    one = case["seeds_1"]
    assert math.isclose(one["trainer_steps_per_second"], one["learner_steps_per_second"] * 2 * 29, rel_tol=1e-9)
    assert math.isclose(one["trainer_over_network_only"],
                        one["network_only_steps_per_second"] / one["learner_steps_per_second"], rel_tol=1e-9)
    assert 0 < one["trainer_steps_per_second"] < math.inf and one["trainer_compile_seconds"] > 0
