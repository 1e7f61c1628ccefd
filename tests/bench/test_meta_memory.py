"""A long meta-training run keeps a flat memory footprint (issue 32): `bench --meta` measures 300 generations;
here a shorter run of the same tiny config, every generation writing metrics, objective and checkpoint."""

import pytest

from metadisco.bench.meta import memory_over_generations


@pytest.mark.heavy
@pytest.mark.slow  # 27 s on 2 cores
def test_resident_memory_stays_flat_over_generations():
    figure = memory_over_generations(generations=40, early=10, timesteps=256)  # 4 updates a member
    assert len(figure["rss_bytes_every_10_generations"]) == 4
    assert abs(figure["growth_fraction"]) <= 0.10, figure
