"""Every listed brax env of this half trains; one of them also runs the random policy (`every_env.py`)."""

import numpy as np
import pytest
from every_env import BRAX_RANDOM_POLICY, check_env_trains_and_runs_the_random_policy, share


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.parametrize("env_id", share("brax_a"))
def test_listed_env_trains_and_runs_the_random_policy(env_id):
    value = check_env_trains_and_runs_the_random_policy(env_id)
    assert (value is None) == (env_id not in BRAX_RANDOM_POLICY)
    assert value is None or (isinstance(value, float) and not np.isinf(value))  # NaN: no episode ended in 8 steps
