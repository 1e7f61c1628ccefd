"""meta-train --dry-run: the plan's env steps, FLOPs and memory against a real tiny run, and nothing written."""

import jax
import numpy as np
import pytest
import yaml
from tiny_meta import TINY, read_metrics, tiny

from metadisco.cli import main
from metadisco.meta import paired
from metadisco.meta.load import parse_config
from metadisco.meta.loop import meta_train
from metadisco.meta.plan import plan, render
from metadisco.meta.step import GenerationStep
from metadisco.parallel import cost, hosts

pytestmark = pytest.mark.slow  # compiles every loop body of the trainer apart (about a minute on 2 busy cores)

# The FLOPs, memory, render and dry-run tests plan one paired training task (every loop body of its program is
# compiled apart, once: `cost._BODIES`); the env-step test adds a validation task to it, whose program the run
# compiles anyway (a plan's compile of a program and the run's call of it share one executable).
PAIRED = tiny(generations=3, eval_every=2, normalise="paired")
CONFIG = {**PAIRED, "validation": {"tasks": [{**TINY["tasks"][0], "env": "Catch-bsuite"}], "every": 2}}


@pytest.fixture(scope="module")
def planned():
    step = GenerationStep(parse_config(PAIRED))
    return step, plan(step)


@pytest.mark.heavy
def test_env_steps_are_the_runs_own(tmp_path, monkeypatch):
    """Env steps are counted from the draws, rows and seeds, not from XLA's cost model: this plan leaves the
    cost model out (costing each loop body of the validation program apart would add minutes and nothing here;
    test_memory_and_flops_are_the_real_programs checks the cost model)."""
    step = GenerationStep(parse_config(CONFIG))
    monkeypatch.setattr(cost, "jaxpr_cost", lambda closed, compiled=None: cost.Cost())
    result = plan(step)
    assert [p.role for p in result.programs] == ["train", "validation"]
    assert result.memory_per_device == max(p.memory.total for p in result.programs) > 0
    meta_train(CONFIG, tmp_path, progress=False, plot=False)
    lines = read_metrics(tmp_path)
    assert any(line.get("validation") is not None for line in lines)  # the validations the plan counts ran
    steps = [line["env_steps"] for line in lines]
    assert result.total.env_steps == steps[-1]
    assert [g.env_steps for g in result.generations] == np.diff([0, *steps]).tolist()


def test_memory_and_flops_are_the_real_programs(planned):
    step, result = planned
    task = step.problem.tasks[0]
    # the arguments generation 0 gives the program, built as the generation step builds them
    keys = step.keys(0)
    population = hosts.to_host(step.ask(keys.ask, step.init())[0])
    rows = paired.with_control(population, step.problem.control, step.devices)
    args = step.problem.program_args(task, hosts.to_global(rows, step.mesh), paired.rows_of(keys.tasks[0][0], 8))
    compiled = task.population_program.lower(*args).compile()
    stats = compiled.memory_analysis()
    (program,) = [p for p in result.programs if p.role == "train"]
    assert program.rows == step.problem.population_rows() == 8
    assert program.memory.total == (stats.argument_size_in_bytes + stats.output_size_in_bytes
                                    + stats.temp_size_in_bytes - stats.alias_size_in_bytes
                                    + stats.generated_code_size_in_bytes)
    assert result.memory_per_device >= program.memory.total
    # FLOPs: the real program's, per device times the devices ...
    per_device = cost.jaxpr_cost(jax.make_jaxpr(task.population_program)(*args), compiled)
    assert program.cost.flops == pytest.approx(per_device.flops * step.devices, rel=1e-6)
    # ... at least the agent network's own matmuls counted by hand (the env, GAE and Adam add the rest), and of
    # the same order: every update's rollout runs the actor and critic forward, each minibatch step forward and
    # backward (about three times a forward pass)
    c = task.train_config
    sizes = [4, *c.hidden_sizes]
    forward = sum(2 * a * b for a, b in zip(sizes, sizes[1:], strict=False)) * 2 + 2 * c.hidden_sizes[-1] * (2 + 1)
    samples = c.num_updates * c.batch_size * (1 + 3 * c.options.update_epochs)
    hand = program.rows * program.seeds * samples * forward
    assert hand < program.cost.flops < 20 * hand
    assert sum(g.cost.flops for g in result.generations) == pytest.approx(result.total.cost.flops)


def test_render_says_it_is_an_estimate(planned):
    _, result = planned
    lines = render(result, cost.accelerator("H100-SXM"))
    assert any(line.startswith("ESTIMATE for one H100-SXM") and "not a measurement" in line for line in lines)
    assert any(f"{result.total.env_steps:,} env steps" in line for line in lines)


def test_the_dry_run_writes_nothing(planned, tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(PAIRED))  # the fixture's config: its programs and loop bodies are compiled
    monkeypatch.chdir(tmp_path)
    assert main(["meta-train", str(config), "--dry-run", "--out", str(tmp_path / "run"), "--accelerator", "t4",
                 "--accelerator-memory", "1"]) == 0
    out = capsys.readouterr().out
    assert "ESTIMATE for one T4 (figures overridden)" in out and "does NOT fit" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]
    assert main(["meta-train", str(config)]) == 2
    assert "give --out DIR" in capsys.readouterr().err
    assert main(["meta-train", str(config), "--dry-run", "--accelerator", "B200"]) == 2
    assert "unknown accelerator 'B200'" in capsys.readouterr().err
