"""`bench --meta --recipes`: a recipe's training generations against its scoring ones (issue 45). The figure's
bookkeeping is checked here on a tiny recipe; its seconds are measured by running the benchmark."""

import json

import pytest

from metadisco.bench.meta import generation_seconds
from metadisco.meta.load import parse_config

TINY = {"num_envs": 4, "num_steps": 16, "hidden_sizes": [8, 8], "num_minibatches": 2, "update_epochs": 1}


def tiny_recipe(validation: bool) -> dict:
    recipe = {"objective": {"drift": {"kind": "lpo", "hidden": 4}},
              "tasks": [{"env": "CartPole-v1", "timesteps": 256, "seeds": 1, "train": TINY}],
              "strategy": {"name": "Open_ES", "population_size": 4, "sigma_init": 0.03, "lr": 0.03},
              "normalise": "paired", "generations": 50, "eval_every": 7, "held_out_envs": []}
    if validation:
        recipe["validation"] = {"every": 11, "tasks": [{"env": "Acrobot-v1", "timesteps": 256, "seeds": 1,
                                                        "train": TINY}]}
    return recipe


@pytest.mark.slow  # 36 s on 2 cores
@pytest.mark.parametrize("validation", [False, True], ids=["scored", "scored_and_validated"])
def test_generations_are_told_apart_and_compiling_is_taken_out(validation):
    fig = generation_seconds(parse_config(tiny_recipe(validation)), every=2, scorings=2)
    rows = fig["rows"]
    # The recipe's own periods are replaced: 4 generations, the mean scored (and validated) at the 2nd and 4th.
    assert [r["kind"] for r in rows] == ["training", "scoring"] * 2
    hooks = {"scored": {"fitness_of_mean"}, "scored_and_validated": {"fitness_of_mean", "validation"}}
    for row in rows:
        assert row["warm_seconds"] == pytest.approx(row["seconds"] - row["compile_seconds"])
        assert 0 <= row["compile_seconds"] < row["seconds"]
        if row["kind"] == "scoring":
            assert set(row["scoring_seconds"]) >= hooks["scored_and_validated" if validation else "scored"]
    # Generation 0 compiles the population's program; a later training generation of the same task reuses it.
    assert rows[0]["compile_seconds"] > 0 and rows[2]["compile_seconds"] < rows[0]["compile_seconds"]
    assert fig["warm_seconds_per_scoring_generation"] == pytest.approx(
        (rows[1]["warm_seconds"] + rows[3]["warm_seconds"]) / 2)
    assert fig["validation_tasks"] == (["Acrobot-v1"] if validation else [])
    assert fig["start_seconds"] > 0 and json.dumps(fig)  # the CLI writes it as JSON
