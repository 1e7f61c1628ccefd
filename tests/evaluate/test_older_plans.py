"""Evaluations written by older versions still resume: their cells' plan.json holds config records of 0.2.0 (every
config with PQN's epsilon settings, the update rule's replay settings and PPO's coefficients as fields), which
`metadisco.runs.migrate.upgrade_records` reads as this version writes them. Each test recomputes the settings of a
committed evaluation's command and compares them with its stored plan, as `--resume` does."""

from pathlib import Path

import jax
import pytest

from metadisco.core.cells import first_difference
from metadisco.core.io import read_json
from metadisco.evaluate import _Plan, prepare
from metadisco.evaluate.rules import Rules
from metadisco.evaluate.training import Training
from metadisco.runs.migrate import FORMER_FIELDS, upgrade_config_record, upgrade_records
from metadisco.trainers.hyper import static_of

ROOT = Path(__file__).resolve().parents[2]
# results/lpg_gridworld/run.sh's AGENT: the --set changes of its judges.
AGENT = ("num_envs=8", "num_steps=20", "replay_capacity=8", "replay_batch=8", "hidden_sizes=64,64",
         "activation=tanh", "gamma=0.99")


def settings_of(objective, baselines, envs, seeds, seed, rules, overrides=(), devices=2) -> dict:
    methods, envs, configs = prepare(objective, envs, baselines, seeds, training=Training(overrides=overrides),
                                     seed=seed, rules=rules)
    return _Plan(methods, envs, configs, seeds, seed, rules, jax.devices()[:1] * devices).settings()


def stored(folder: str) -> dict:
    return read_json(ROOT / folder / "cells" / "plan.json")["settings"]


def test_a_ppo_judge_of_0_2_0_resumes():
    """results/talpo_floor/run.sh's judge at 1e6 (every config a PPO record with the four epsilon fields)."""
    rules = Rules("final_return", 16, (("lr", (2.5e-3, 5e-3, 1e-2)),))
    now = settings_of("floored=results/talpo_floor/run/objective.msgpack",
                      ["ppo", "dpo", "unfloored=results/talpo_minatar_tuned/run/objective.msgpack"],
                      ["SpaceInvaders-MinAtar@1000000", "Freeway-MinAtar@1000000"], 16, 1000, rules)
    old = stored("results/talpo_floor/eval_1m")
    assert "eps_start" in old["configs"]["SpaceInvaders-MinAtar"]  # it is a plan of the older records
    assert first_difference(old, now) is not None
    assert first_difference(upgrade_records(old), now) is None


def test_an_update_rule_judge_of_0_2_0_resumes():
    """results/lpg_gridworld/run.sh's gridworld judge: the update rule's replay settings were fields then."""
    if not (ROOT / "results/lpg_gridworld/run/objective.msgpack").is_file():
        pytest.skip("the LPG objective is not in this checkout")
    rules = Rules("final_return", 16, (("lr", (2.5e-4, 1e-3, 4e-3)),))
    lpg = read_json(ROOT / "results/lpg_gridworld/eval_held_out_gridworld/cells/plan.json")["settings"]
    now = settings_of("talpg=results/lpg_gridworld/run/objective.msgpack", ["ppo"],
                      [f"{e}@65536" for e in ("gridworld/rand_dense", "gridworld/long", "gridworld/rand_long")],
                      16, 3000, rules, AGENT)
    assert first_difference(upgrade_records(lpg), now) is None


@pytest.mark.parametrize("algorithm", ["ppo", "dqn", "update_rule", "pqn"])
def test_upgrading_keeps_an_algorithms_own_settings_and_is_idempotent(algorithm):
    from metadisco.runs.seeds import resolve_config
    from metadisco.trainers.config import config_to_dict

    config = resolve_config("CartPole-v1", algorithm=algorithm)
    current = config_to_dict(config)
    assert upgrade_config_record(current) == current  # a current record comes back equal
    # 0.2.0 wrote every former field (now some algorithm's option) whatever the algorithm: its own at its values.
    whole = {**FORMER_FIELDS, **current}
    assert upgrade_config_record(whole) == current
    changed = {**whole, "eps_start": 0.5}  # a value no config of that version held for the algorithm is kept
    assert "eps_start" in upgrade_config_record(changed)
    # A static config's record (a sweep plan's: traced fields blank) drops the unread ones at None as well.
    static = config_to_dict(static_of(config))
    assert upgrade_config_record({**{k: None for k in ("ent_coef", "vf_coef", "max_grad_norm")}, **static}) == static


@pytest.mark.parametrize("algorithm", ["ppo", "dqn", "update_rule", "pqn"])
def test_a_record_holds_the_common_fields_and_its_algorithms_options(algorithm):
    import dataclasses

    from metadisco.runs.seeds import resolve_config
    from metadisco.trainers.algorithm import get_algorithm, option_names
    from metadisco.trainers.config import TrainConfig, config_to_dict

    record = config_to_dict(resolve_config("CartPole-v1", algorithm=algorithm))
    common = {f.name for f in dataclasses.fields(TrainConfig)} - {"algorithm_options", "eval_episodes"}
    assert set(record) == common | set(option_names(get_algorithm(algorithm)))


def test_every_committed_plan_reads_without_former_fields_its_algorithm_lacks():
    from metadisco.trainers.algorithm import get_algorithm, option_names

    plans = sorted(ROOT.glob("results/**/cells/plan.json"))
    assert plans
    for path in plans:
        settings = upgrade_records(read_json(path).get("settings"))
        for config in _configs(settings):
            algorithm = get_algorithm(config["algorithm"])
            assert not (set(FORMER_FIELDS) - set(option_names(algorithm))) & set(config), path


def _configs(tree):
    if isinstance(tree, dict):
        if {"algorithm", "num_envs", "num_steps", "total_timesteps"} <= set(tree):
            yield tree
        else:
            for v in tree.values():
                yield from _configs(v)
    elif isinstance(tree, list):
        for v in tree:
            yield from _configs(v)


@pytest.mark.parametrize("spec", [
    {"value_loss": {"kind": "learned_td", "hidden": [32, 32]}, "algorithm": {"kind": "dqn"}},
    {"value_loss": {"kind": "learned", "hidden": [16]}},
    {"drift": {"kind": "talpo", "hidden": 8}, "optimizer": {"kind": "learned", "hidden": [8, 8]}},
])
def test_a_stored_spec_with_sequence_options_compares_equal_to_the_plan_written_now(spec):
    """A plan stores a spec as JSON (a piece's tuple options as lists); upgraded, it is what the plan written now
    holds, so a judge of a learned piece with hidden sizes resumes."""
    import json

    from metadisco.objectives import Objective

    stored = json.loads(json.dumps({"spec": Objective.from_spec(spec).to_spec()}))
    assert first_difference(upgrade_records(stored), stored) is None
    assert upgrade_records(upgrade_records(stored)) == stored
