"""The random streams' tags (`metadisco.core.streams`): distinct within each parent, out of reach of the counters
that fold into the same parent, and the only definitions of their kind in the package."""

import re
from pathlib import Path

import jax
import numpy as np

from metadisco.core import streams

PACKAGE = Path(streams.__file__).resolve().parents[1]


def test_tags_of_one_parent_differ_and_generations_never_reach_the_meta_streams():
    for family in (streams.META_STREAMS, streams.TASK_STREAMS):
        assert len(set(family)) == len(family)
    # generation g draws from fold_in(base, g): a run of 2**31 - 7 generations would be needed to reach one
    assert min(streams.META_STREAMS) >= 2**31 - 6 and max(streams.META_STREAMS) <= 2**31 - 1
    # PBT's round r draws from default_rng([seed, r]); rounds are counted far below its init tag
    assert streams.PBT_INIT_STREAM > 1000


def test_distinct_tags_give_independent_looking_keys():
    base = jax.random.PRNGKey(0)
    tags = [*streams.META_STREAMS, *range(8)]  # the meta streams and the first generations
    keys = np.stack([np.asarray(jax.random.key_data(jax.random.fold_in(base, t))) for t in tags])
    assert len({k.tobytes() for k in keys}) == len(tags)


def test_no_module_defines_a_stream_tag_of_its_own():
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "streams.py" and path.parent.name == "core":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"^[A-Z_]*STREAM\s*=", line):
                found.append(f"{path.relative_to(PACKAGE)}:{n}")
    assert not found, found
