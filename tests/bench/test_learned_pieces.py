"""`metadisco bench`'s learned-pieces section (`bench.train.learned_piece_costs`): OPEN beside the learned
optimiser and LPO, each against Adam / PPO on the same config and keys, per seed count and for a population of
members (small timesteps; `metadisco bench` writes this dict as its "learned_pieces").

The test measures OPEN alone (the piece with its own context) at the smallest settings the function takes: one
seed count and no population, so two trainer compiles (Adam's and OPEN's; each further piece, seed count or the
population adds its own, some 30-80 s on two busy cores). Every piece and the population go through the same
`timed` and `_with_costs`; LPO, the learned optimiser and the population figures are left to `metadisco bench`."""

import math

import pytest

from metadisco.bench.train import LEARNED_PIECES, learned_piece_costs

PIECES = ("open",)


@pytest.mark.heavy
@pytest.mark.slow  # 41 s on 2 cores
def test_the_learned_pieces_section_includes_open():
    timesteps = 4 * 128 * 2  # CartPole's preset: 4 envs x 128 steps, so 2 updates
    section = learned_piece_costs("CartPole-v1", timesteps, seed_counts=(1,), population=0, pieces=PIECES)
    assert section["env"] == "CartPole-v1" and section["num_updates"] == 2 and "population" not in section
    one = section["seeds_1"]
    assert set(one) == {"adam", *PIECES}
    for name, figures in one.items():
        # time per update and steps per second are one measurement: seconds x updates x steps/s = the steps
        total = figures["seconds_per_update"] * section["num_updates"] * figures["steps_per_second"]
        assert math.isclose(total, section["timesteps_per_seed"], rel_tol=1e-6), name
        assert figures["compile_seconds"] > 0
    for name in PIECES:
        assert one[name]["cost"] == one["adam"]["steps_per_second"] / one[name]["steps_per_second"]
        assert 0 < one[name]["cost"] < math.inf


def test_an_unknown_piece_is_named():
    with pytest.raises(ValueError, match=r"unknown piece 'adamw'; pieces: " + ", ".join(LEARNED_PIECES)):
        learned_piece_costs("CartPole-v1", 1024, pieces=("open", "adamw"))
