"""Deterministic evaluation episodes (`metadisco.trainers.greedy`): the loop against the env stepped by hand, the
trainer's `eval_return` against a separate play of its final agent, training untouched, and the meta-training
fitness that reads it."""

import functools
from dataclasses import replace

import jax
import numpy as np
import pytest

from metadisco.core.streams import GREEDY_EVAL_STREAM
from metadisco.envs import make_env
from metadisco.meta.baselines import measure_baselines
from metadisco.meta.load import parse_config
from metadisco.meta.step import GenerationStep
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.runs.seeds import resolve_config
from metadisco.trainers import make_trainer
from metadisco.trainers.greedy import make_greedy_returns
from metadisco.trainers.metrics import named_numbers, reduce_fitness
from metadisco.trainers.networks import make_network
from tests.tiny_meta import tiny

ENV = "CartPole-v1"
TINY = ["num_envs=4", "num_steps=16", "hidden_sizes=8,8", "update_epochs=1", "num_minibatches=1"]
TIMESTEPS = 16 * 64
EPISODES = 6


@functools.cache
def greedy_play():
    """The one compiled greedy play (EPISODES episodes, unbatched) both play tests use."""
    config = replace(resolve_config(ENV, None, TINY, TIMESTEPS), eval_episodes=EPISODES)
    return jax.jit(make_greedy_returns(config, make_env(ENV), EPISODES))


def test_greedy_episodes_follow_the_env_by_hand():
    """A policy that always prefers action 0 (a hand-set head), played greedily, scores what stepping the env by
    hand with action 0 and the same keys scores, episode by episode."""
    config = resolve_config(ENV, None, TINY, TIMESTEPS)
    env = make_env(ENV)
    network = make_network(env.spec, config.hidden_sizes, config.activation)
    params = network.init(jax.random.PRNGKey(0), np.zeros((1, *env.spec.obs_shape), np.float32))
    head = params["params"]["policy_head"]
    params["params"]["policy_head"] = {"kernel": np.zeros_like(head["kernel"]), "bias": np.array([1.0, 0.0])}
    play = greedy_play()
    for seed in range(3):
        key = jax.random.PRNGKey(seed)
        returns = np.asarray(play(params, key, None))
        reset_key, key = jax.random.split(key)
        states = [env.reset(k)[1] for k in jax.random.split(reset_key, EPISODES)]
        expected = np.zeros(EPISODES)
        done = np.zeros(EPISODES, bool)
        while not done.all():
            key, step_key = jax.random.split(key)
            for i, k in enumerate(jax.random.split(step_key, EPISODES)):
                states[i], out = env.step(k, states[i], 0)
                if not done[i]:
                    expected[i] += float(out.reward)
                    done[i] = bool(out.terminated | out.truncated)
        np.testing.assert_array_equal(returns, expected)
        assert np.all(returns >= 1) and np.all(returns < 50)  # always pushing left ends CartPole fast



@pytest.mark.heavy
@pytest.mark.slow  # 57 s on 2 cores
def test_trainer_eval_return_is_a_play_of_its_final_agent_and_leaves_training_alone():
    """With eval_episodes the trainer's metrics are those without, bit for bit, plus eval_return: NaN but at the
    last update, where it is the mean of a separate play of the final params from fold_in(key, GREEDY_EVAL_STREAM)."""
    config = resolve_config(ENV, None, TINY, TIMESTEPS)
    played = replace(config, eval_episodes=EPISODES)
    env = make_env(ENV)
    objective = BUILTIN_OBJECTIVES["dpo"]
    meta = objective.zero_meta()
    plain = jax.jit(jax.vmap(make_trainer(config, env, objective).train, (0, None)))
    evaluated = jax.jit(jax.vmap(make_trainer(played, env, objective).train, (0, None)))
    play = greedy_play()  # the program test_greedy_episodes_follow_the_env_by_hand checks, one seed at a time
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    a, b = plain(keys, meta), evaluated(keys, meta)
    assert a.metrics.eval_return is None
    with_eval = named_numbers(b.metrics)
    for field, value in named_numbers(a.metrics).items():
        np.testing.assert_array_equal(value, with_eval[field], err_msg=field)
    last = np.asarray(b.metrics.eval_return)
    assert np.all(np.isnan(last[:, :-1]))
    again = np.array([np.asarray(play(jax.tree.map(lambda x, i=i: x[i], b.params),
                                       jax.random.fold_in(keys[i], GREEDY_EVAL_STREAM), None)).mean()
                      for i in range(len(keys))])
    np.testing.assert_allclose(last[:, -1], again, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(reduce_fitness("eval_return", b.metrics, 0.05)), last[:, -1])


@pytest.mark.heavy
@pytest.mark.slow  # 27 s on 2 cores
def test_meta_training_scores_deterministic_episodes():
    """fitness: eval_return: every task plays 16 episodes per member (unless its train section says otherwise),
    and a generation's fitness is finite; CartPole returns at least 1 per episode."""
    step = GenerationStep(parse_config(tiny(fitness="eval_return")))
    assert all(t.train_config.eval_episodes == 16 for t in step.problem.tasks)
    state, out = step(step.init(), 0, measure_baselines(step.problem))
    assert np.all(np.isfinite(out.returns[0])) and np.all(out.returns[0] >= 1.0)
