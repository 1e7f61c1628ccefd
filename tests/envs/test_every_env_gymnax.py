"""Every listed gymnax (and plugin) env trains and runs the random policy (`every_env.py`)."""

import numpy as np
import pytest
from every_env import check_env_trains_and_runs_the_random_policy, share


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.parametrize("env_id", share("gymnax"))
def test_listed_env_trains_and_runs_the_random_policy(env_id):
    value = check_env_trains_and_runs_the_random_policy(env_id)
    assert isinstance(value, float) and not np.isinf(value)  # NaN only when no episode ends in 8 steps
