"""`metadisco bench --peers`: rejax's PPO at metadisco's settings, the alternating measurement, the quickstart
shape. (The benchmark itself is measured by running it, not by a timed test.)"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from metadisco.bench import peers as bench_peers
from metadisco.trainers.config import TrainConfig, train_config

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def test_population_figure_has_the_quickstart_shape():
    # The quickstart's population, seeds and shortest CartPole length; the drift and learning rate stay those of
    # the quickstart the benchmark was first measured with (LPO hidden 32, lr 2.5e-3), so figures compare.
    quickstart = yaml.safe_load((EXPERIMENTS / "discover_quick.yaml").read_text())
    ours = bench_peers.QUICKSTART
    task = quickstart["tasks"][0]
    assert ours["tasks"][0]["env"] == task["env"] and ours["tasks"][0]["seeds"] == task["seeds"]
    assert ours["tasks"][0]["timesteps"] == min(task["timesteps"])
    assert ours["strategy"]["population_size"] == quickstart["strategy"]["population_size"]


def test_minatar_population_figure_has_short_long_minatars_shape():
    # The recipe's drift, population, seeds and longer Breakout length: the generation its researcher waits for.
    recipe = yaml.safe_load((EXPERIMENTS / "short_long_minatar.yaml").read_text())
    ours = bench_peers.SHORT_LONG_MINATAR
    task = next(t for t in recipe["tasks"] if t["env"] == ours["tasks"][0]["env"])
    assert ours["objective"] == recipe["objective"]
    assert ours["tasks"][0]["seeds"] == task["seeds"] and ours["tasks"][0]["timesteps"] == max(task["timesteps"])
    assert ours["strategy"] == {k: recipe["strategy"][k] for k in ours["strategy"]}


def test_alternate_interleaves_and_takes_the_ratio_of_medians(monkeypatch):
    calls = []
    seconds = {"ours": iter([1.0, 0.5, 0.25]), "theirs": iter([2.0, 2.0, 1.0]), "third": iter([1.0, 1.0, 1.0])}

    def fake_run(compiled, *args):
        calls.append(compiled)
        return next(seconds[compiled])

    monkeypatch.setattr(bench_peers, "_run_seconds", fake_run)
    programs = {"metadisco": ("ours", ()), "rejax": ("theirs", ()), "purejaxrl": ("third", ())}
    out = bench_peers._alternate(programs, steps=100, repeats=3)
    assert calls == ["ours", "theirs", "third"] * 3
    assert out["metadisco_steps_per_second"] == 200.0 and out["rejax_steps_per_second"] == 50.0
    assert out["ratio"] == 4.0 and out["samples"]["metadisco"] == [100.0, 200.0, 400.0]
    assert out["purejaxrl_steps_per_second"] == 100.0 and out["purejaxrl_ratio"] == 2.0


def test_program_ops_counts_loop_bodies_once_and_times_their_trips():
    # A scan of 7 iterations whose body is one fused elementwise kernel and one matrix product: one pass launches
    # the body's kernels, the whole program 7 times them (per update: over the updates the caller names).
    def program(x, w):
        def body(carry, _):
            return jnp.tanh(carry @ w) * 2.0 + 1.0, None
        return jax.lax.scan(body, x, None, 7)[0]

    x = jnp.ones((4, 8))
    compiled = jax.jit(program).lower(x, jnp.ones((8, 8))).compile()
    ops = bench_peers.program_ops(compiled, num_updates=7)
    assert ops["ops"] >= 2
    whole = bench_peers.program_ops(compiled, num_updates=1)["kernels_per_update"]
    assert whole == pytest.approx(7 * ops["kernels_per_update"])
    assert whole >= 7 * 2


@pytest.mark.slow  # 21 s on 2 cores
def test_each_compile_sample_traces_anew(monkeypatch):
    # Not from the memoised program builder or JAX's in-memory caches (a repeat then took 0.3 ms, tracing
    # included): every sample traces again. The suite's persistent compilation cache, which `bench` turns off,
    # is not the subject here.
    monkeypatch.setattr(bench_peers.compile_cache, "hits", lambda: 0)
    config = train_config(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 2, update_epochs=1, num_minibatches=1,
                         hidden_sizes=(8,))
    for sample in [bench_peers.fresh_compile_seconds(config) for _ in range(2)]:
        assert sample["trace_seconds"] > 0.02 and sample["seconds"] > sample["trace_seconds"]


def test_rejax_ppo_takes_our_settings_and_trains():
    pytest.importorskip("rejax")
    from metadisco.bench import rejax as peers

    config = train_config(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 4, update_epochs=2, num_minibatches=2,
                         hidden_sizes=(8, 8))
    algo = peers.rejax_ppo("CartPole-v1", config)
    assert (algo.num_envs, algo.num_steps, algo.num_epochs, algo.num_minibatches) == (4, 16, 2, 2)
    assert algo.total_timesteps == 256 and algo.learning_rate == config.lr
    actor, critic = jax.jit(peers.rejax_train("CartPole-v1", config))(jax.random.PRNGKey(0))
    kernels = [x for x in jax.tree.leaves(actor) if x.ndim == 2]
    assert sorted(k.shape for k in kernels) == [(4, 8), (8, 2), (8, 8)]  # obs 4 -> 8 -> 8 -> 2 actions
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves((actor, critic)))


def test_rejax_pqn_takes_our_settings_and_trains():
    pytest.importorskip("rejax")

    from metadisco.bench import rejax as peers
    from metadisco.trainers.config import get_preset

    config = get_preset("pqn_classic").with_settings(dict(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 4,
                                                          update_epochs=2, num_minibatches=2, hidden_sizes=(8, 8)))
    algo = peers.rejax_pqn("CartPole-v1", config)
    assert (algo.num_envs, algo.num_steps, algo.num_epochs, algo.num_minibatches) == (4, 16, 2, 2)
    assert (algo.td_lambda, algo.eps_start, algo.eps_end, algo.exploration_fraction) == (0.95, 1.0, 0.2, 0.2)
    assert algo.learning_rate == config.lr and algo.total_timesteps == 256
    params = jax.jit(peers.rejax_pqn_train("CartPole-v1", config))(jax.random.PRNGKey(0))
    kernels = [x for x in jax.tree.leaves(params) if x.ndim == 2]
    assert sorted(k.shape for k in kernels) == [(4, 8), (8, 2), (8, 8)]  # obs 4 -> 8 -> 8 -> 2 Q-values
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(params))


def test_five_value_step_merges_termination_and_truncation():
    class Env:
        def step(self, key, state, action, params=None):
            return "obs", state, 1.0, jnp.asarray(False), jnp.asarray(True), {}

    from metadisco.bench.rejax import FiveValueStep

    obs, state, reward, done, info = FiveValueStep(Env()).step(None, "s", 0)
    assert (obs, state, reward, info) == ("obs", "s", 1.0, {}) and bool(done)


def _purejaxrl_checkout(tmp_path):
    """PureJaxRL's ppo.py and wrappers.py, when a checkout is at hand (METADISCO_PUREJAXRL); the test is skipped
    otherwise, as rejax's are without the `bench` extra."""
    from metadisco.bench import purejaxrl

    if not purejaxrl.available():
        pytest.skip("PureJaxRL's checkout is not at hand (set METADISCO_PUREJAXRL to its purejaxrl/ folder)")
    return purejaxrl


def test_purejaxrl_peer_takes_our_settings_and_learns(tmp_path):
    purejaxrl = _purejaxrl_checkout(tmp_path)
    from metadisco.runs.seeds import resolve_config

    config = resolve_config("CartPole-v1", timesteps=100_000)
    assert purejaxrl.purejaxrl_config("CartPole-v1", config)["NUM_ENVS"] == config.num_envs
    out = jax.jit(jax.vmap(purejaxrl.purejaxrl_train("CartPole-v1", config)))(jax.random.split(jax.random.key(0), 3))
    metrics = out["metrics"]
    returns, done = np.asarray(metrics["returned_episode_returns"]), np.asarray(metrics["returned_episode"])
    final = [returns[s, -20:][done[s, -20:]].mean() for s in range(3)]
    assert min(final) > 150, final  # random play scores about 20


def test_purejaxrl_source_must_hold_its_files(tmp_path):
    from metadisco.bench import purejaxrl
    from metadisco.core.errors import UserError

    (tmp_path / "ppo.py").write_text("")
    with pytest.raises(UserError, match="wrappers.py"):
        purejaxrl.check_source(tmp_path)
    with pytest.raises(UserError, match="64 x 64"):
        purejaxrl.purejaxrl_config("CartPole-v1", TrainConfig(hidden_sizes=(32,)))


def test_bench_peers_keeps_each_figure_as_it_is_measured(monkeypatch):
    # A run cut short (a lent GPU's time limit) must still leave the figures measured so far: `keep` sees them grow.
    def figure(*args, **kwargs):
        return {"ratio": 1.0, "ops": {"metadisco": {}}, "samples": {"metadisco": [1.0]}}

    for name in ("seeds_figure", "population_figure", "compile_figure", "env_only_figure"):
        monkeypatch.setattr(bench_peers, name, figure)
    kept = []
    bench_peers.bench_peers(timesteps=1024, repeats=1, figures=("ppo",), keep=lambda out: kept.append(sorted(out)))
    figures = [[k for k in keys if k in ("seeds_1", "seeds_16", "population", "compile", "env_only_seeds_1")]
               for keys in kept]
    assert figures == [["seeds_1"], ["seeds_1", "seeds_16"], ["population", "seeds_1", "seeds_16"],
                       ["compile", "population", "seeds_1", "seeds_16"],
                       ["compile", "env_only_seeds_1", "population", "seeds_1", "seeds_16"]]
