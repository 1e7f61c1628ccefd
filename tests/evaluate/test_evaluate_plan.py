"""evaluate --dry-run: env steps and memory of the real calls, FLOPs with loops counted, nothing written."""

import jax
import pytest

from metadisco.cli import main
from metadisco.envs import make_env
from metadisco.evaluate import Rules, Training, prepare
from metadisco.evaluate.plan import plan_evaluation
from metadisco.evaluate.runner import group_methods, group_program
from metadisco.parallel import cost
from metadisco.runs.seeds import seed_keys

pytestmark = pytest.mark.slow  # compiles every loop body of the trainer apart

TRAIN = ["num_envs=4", "num_steps=16", "hidden_sizes=8,8", "num_minibatches=2", "update_epochs=2"]


@pytest.mark.heavy
def test_the_plan_is_the_evaluations_calls():
    methods, envs, configs = prepare("dpo", ["CartPole-v1"], ["ppo"], 2, training=Training(256, TRAIN))
    (dpo, ppo) = plan_evaluation(methods, envs, configs, 2)
    assert (dpo.label, ppo.label) == ("CartPole-v1: dpo", "CartPole-v1: ppo")  # different drifts: two calls
    assert dpo.runs == 2 and dpo.env_steps == 2 * 256
    fn, args = group_program(make_env("CartPole-v1"), group_methods(methods)[1], configs["CartPole-v1"]["ppo"],
                             seed_keys(2), tuple(jax.local_devices()))
    compiled = fn.lower(*args).compile()
    assert ppo.memory == cost.memory(compiled)
    per_device = cost.jaxpr_cost(jax.make_jaxpr(fn)(*args), compiled)
    assert ppo.cost.flops == pytest.approx(2 * per_device.flops)  # one seed on each of 2 devices
    assert ppo.cost.flops > 10 * cost.xla_cost(compiled).flops  # XLA alone counts each loop body once
    # A tuning grid of 3 points: the same program made 1 + 2 x 3 times (fresh seeds), 1 + 3 times (same seeds).
    for rule, calls in (("fresh_seeds", 7), ("same_seeds", 4)):
        tuned = plan_evaluation(methods, envs, configs, 2, rules=Rules(tune=(("lr", (1e-3, 2e-3, 3e-3)),),
                                                                     tune_rule=rule))[1]
        assert tuned.calls == calls and tuned.env_steps == calls * ppo.env_steps
        assert tuned.cost.flops == pytest.approx(calls * ppo.cost.flops)


def test_the_dry_run_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    command = ["evaluate", "dpo", "--envs", "CartPole-v1", "--seeds", "2", "--timesteps", "256",
               *[x for kv in TRAIN for x in ("--set", kv)], "--dry-run", "--accelerator", "L4"]
    assert main(command) == 0
    out = capsys.readouterr().out
    assert "whole evaluation: 1,024 env steps" in out and "ESTIMATE for one L4" in out
    assert list(tmp_path.iterdir()) == []
    assert main(command[:-3]) == 2 and "give --out DIR" in capsys.readouterr().err


def test_the_keywords_of_0_1_0_are_gone_for_training():
    """0.1.0's timesteps=, overrides=, preset= are `Training(...)` (the 0.2.0 changelog)."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'timesteps'"):
        prepare("dpo", ["CartPole-v1"], ["ppo"], 2, timesteps=256)
