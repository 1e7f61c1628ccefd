"""`metadisco bench`'s learned-pieces section (`bench.train.learned_piece_costs`): OPEN beside the learned
optimiser and LPO, each against Adam / PPO on the same config and keys, per seed count and for a population of
members (small timesteps; `metadisco bench` writes this dict as its "learned_pieces").

The test measures OPEN (the piece with its own context) and LPO (a drift): every piece goes through the same
loop, and each measured piece costs two trainer compiles, so the learned optimiser is left to `metadisco bench`."""

import math

import pytest

from metadisco.bench.train import LEARNED_PIECES, learned_piece_costs

PIECES = ("open", "lpo")


def test_the_learned_pieces_section_includes_open():
    timesteps = 4 * 128 * 2  # CartPole's preset: 4 envs x 128 steps, so 2 updates
    section = learned_piece_costs("CartPole-v1", timesteps, seed_counts=(1,), population=2, pieces=PIECES)
    assert section["env"] == "CartPole-v1" and section["num_updates"] == 2
    one, population = section["seeds_1"], section["population"]
    assert set(one) == {"adam", *PIECES} and set(population) == {"members", "adam", *PIECES}
    for name, figures in one.items():
        # time per update and steps per second are one measurement: seconds x updates x steps/s = the steps
        total = figures["seconds_per_update"] * section["num_updates"] * figures["steps_per_second"]
        assert math.isclose(total, section["timesteps_per_seed"], rel_tol=1e-6), name
        assert figures["compile_seconds"] > 0
    for name in PIECES:
        for figures in (one, population):
            assert figures[name]["cost"] == figures["adam"]["steps_per_second"] / figures[name]["steps_per_second"]
            assert 0 < figures[name]["cost"] < math.inf
    assert population["members"] == 2 and population["open"]["steps_per_second"] > 0


def test_an_unknown_piece_is_named():
    with pytest.raises(ValueError, match=r"unknown piece 'adamw'; pieces: " + ", ".join(LEARNED_PIECES)):
        learned_piece_costs("CartPole-v1", 1024, pieces=("open", "adamw"))
