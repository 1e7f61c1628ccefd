"""The outer loop's parts: the typed run record reads the checkpoint facts of every version, and the hooks
compute the ES mean at most once per generation."""

import pytest
from tiny_meta import read_metrics, tiny

from metadisco import meta_train
from metadisco.meta.record import RunRecord
from metadisco.meta.step import GenerationStep


def test_record_reads_and_writes_the_checkpoint_facts_as_they_were():
    old = {"fitness_of_initial_mean": 1.0, "validation_of_initial_mean": 0.98, "best_validation": 1.02,
           "best_generation": 5, "best_hyper": {"lr": 0.3}, "fitness_of_final_mean": 1.1, "fitness_of_best": 1.05}
    record = RunRecord.from_plain(old)
    assert record.best_generation == 5 and record.best_hyper == {"lr": 0.3}
    assert record.to_plain() == old
    assert RunRecord().to_plain() == {}  # unset facts are not written (as None values never were)


def test_record_carries_facts_it_does_not_know():
    record = RunRecord.from_plain({"fitness_of_initial_mean": 1.0, "from_a_newer_version": [1, 2]})
    assert record.other == {"from_a_newer_version": [1, 2]}
    assert record.to_plain() == {"from_a_newer_version": [1, 2], "fitness_of_initial_mean": 1.0}


@pytest.mark.slow  # 24 s on 2 cores
@pytest.mark.parametrize("eval_every", [1, 2])
def test_the_es_mean_is_computed_once_per_generation(tmp_path, monkeypatch, eval_every):
    calls = []
    solution = GenerationStep.solution
    monkeypatch.setattr(GenerationStep, "solution", lambda self, state: calls.append(1) or solution(self, state))
    generations = 3
    meta_train(tiny(generations=generations, eval_every=eval_every), tmp_path / "run", progress=False, plot=False)
    # generation 0's mean (scored, written, checkpointed), then one per generation for every hook after it
    assert len(calls) == generations + 1
    lines = read_metrics(tmp_path / "run")
    assert [("fitness_of_mean" in line) for line in lines] == [(g + 1) % eval_every == 0 or g + 1 == generations
                                                              for g in range(generations)]
    # a scoring generation says what its scoring cost; a plain training generation carries no such field
    assert [sorted(line.get("scoring_seconds", {})) for line in lines] == [
        ["fitness_of_mean"] if "fitness_of_mean" in line else [] for line in lines]
