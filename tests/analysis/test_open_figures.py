"""Inside OPEN (`metadisco.analysis.open_figures`, `metadisco.analysis.dormancy`): the update surface is the
optimiser's own update for the same inputs (many random ones); the dormant fraction is OPEN's (0 for equal
activations, a dead unit counted); `plot` draws the figures of a random OPEN objective, and with --env trains it
and Adam on the same seeds, Adam wrapped by the recorder training exactly as Adam."""

import functools

import jax
import jax.numpy as jnp
import matplotlib.image
import numpy as np
import pytest

from metadisco.analysis import open_figures as F
from metadisco.analysis.dormancy import TAU, dormancy_runs, dormant_fraction
from metadisco.cli import main
from metadisco.envs import make_env
from metadisco.objectives import OPTIMIZERS, Objective, OptimizerContext, OptimizerInputs, Progress, save_objective
from metadisco.objectives import open_optimizer as O
from metadisco.runs.seeds import resolve_config, seed_keys
from metadisco.trainers import make_train

SEEDS = range(16)
NO_CLIP = OptimizerInputs(1e-3, 1e9, 100)  # the surface shows the rule itself: no gradient clipping
PROGRESS = Progress(jnp.float32(0.0), jnp.float32(10.0))
# (actor, critic) layer proportions: static in the compiled step (OPEN reads them as Python floats), so each pair
# is a program; three pairs give each tower each of 0, 0.5 and 1.
LAYERS = ((0.0, 1.0), (0.5, 0.0), (1.0, 0.5))


def random_meta(key, scale):
    zero = OPTIMIZERS.make("open").zero_meta()
    leaves, treedef = jax.tree.flatten(zero)
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(treedef, [scale * jax.random.normal(k, x.shape) for k, x in zip(keys, leaves,
                                                                                              strict=True)])


@functools.cache
def optimiser_step():
    """jit(meta, params, grads, momenta, carry, acts, training, layers, batch, key) -> the update OPEN's own
    transformation subtracts, for params {"a": actor [5, 7], "c": critic [7]}."""
    piece = OPTIMIZERS.make("open")

    def step(meta, params, grads, momenta, carry, acts, training, layers, batch, key):
        tx = piece(meta, NO_CLIP, PROGRESS)
        mask = {"a": 1.0, "c": 0.0}
        layer_tree = {"a": float(layers[0]), "c": float(layers[1])}
        context = OptimizerContext(acts, mask, layer_tree, training, batch, key)
        updates, _ = tx.update(grads, O.OpenState(momenta, carry, None), params, context=context)
        return jax.tree.map(jnp.negative, updates)  # u: what the parameter loses

    return jax.jit(step, static_argnums=(7,))


@pytest.mark.slow  # 18 s on 2 cores
def test_the_surface_is_the_optimisers_own_update():
    """For random meta, parameters, gradients, momenta (six timescales), GRU states, activations and
    proportions: the surface's step plus its noise scale times the optimiser's own normal draw, after OPEN's
    zero-mean shift, is the optimiser's update, on the actor (noisy) and the critic (no noise) alike."""
    for seed in SEEDS:
        k = jax.random.split(jax.random.PRNGKey(seed), 10)
        meta = random_meta(k[0], float(jax.random.uniform(k[1], (), minval=0.2, maxval=2.0)))
        shapes = {"a": (5, 7), "c": (7,)}
        params = {n: jax.random.normal(jax.random.fold_in(k[2], i), s) for i, (n, s) in enumerate(shapes.items())}
        scale = 10.0 ** float(jax.random.uniform(k[3], (), minval=-5, maxval=-1))
        grads = {n: scale * jax.random.normal(jax.random.fold_in(k[4], i), s)
                 for i, (n, s) in enumerate(shapes.items())}
        size = sum(int(np.prod(s)) for s in shapes.values())
        momenta = scale * jax.random.normal(k[5], (len(O.DECAYS), size))  # the optimiser's layout: features first
        carry = jnp.tanh(jax.random.normal(k[6], (8, size)))
        acts = {n: jnp.abs(jax.random.normal(jax.random.fold_in(k[7], i), (7,))) for i, n in enumerate(shapes)}
        training, batch = jax.random.uniform(k[8], (2,))
        layers = LAYERS[seed % len(LAYERS)]
        u = optimiser_step()(meta, params, grads, momenta, carry, acts, training, layers, batch, k[9])

        noise = jax.random.normal(k[9], (size,))  # the optimiser's draw: one normal per parameter, in order
        offset, expected = 0, {}
        for (name, shape), layer in zip(shapes.items(), layers, strict=True):
            n = int(np.prod(shape))
            m = momenta[:, offset:offset + n].reshape((len(O.DECAYS),) + shape)
            x = F.surface_features(params[name], grads[name], m, training, layer, batch, O.dormancy(acts[name]))
            s = F.open_surface(meta, x, carry[:, offset:offset + n].reshape((8,) + shape))
            actor = 1.0 if name == "a" else 0.0
            expected[name] = s.step + actor * s.noise_scale * noise[offset:offset + n].reshape(shape)
            offset += n
        mean = jnp.mean(jnp.concatenate([jnp.ravel(v) for v in expected.values()]))
        top = max(float(jnp.max(jnp.abs(v))) for v in expected.values())
        for name in shapes:  # float32 rounding of compiled against eager code, relative to the largest update
            np.testing.assert_allclose(u[name], expected[name] - mean, rtol=2e-5, atol=1e-5 * top,
                                       err_msg=f"seed {seed}")


def test_one_momentum_fills_every_timescale():
    key = jax.random.PRNGKey(4)
    for seed in SEEDS:
        k = jax.random.split(jax.random.fold_in(key, seed), 3)
        g, m = 1e-3 * jax.random.normal(k[0], (4, 6)), 1e-3 * jax.random.normal(k[1], (4, 6))
        p = jax.random.normal(k[2], (4, 6))
        full = jnp.broadcast_to(m[None], (len(O.DECAYS),) + m.shape)
        np.testing.assert_array_equal(F.surface_features(p, g, m, 0.3, 0.5, 0.0, 1.0),
                                      F.surface_features(p, g, full, 0.3, 0.5, 0.0, 1.0))


def test_update_grid_is_the_surface_of_the_grid_tensor():
    meta = random_meta(jax.random.PRNGKey(9), 0.7)
    grads, momenta = F.grid_values(per_side=5), F.grid_values(1e-5, 1e-2, per_side=4)
    for t in (0.0, 0.5, 1.0):
        grid = F.update_grid(meta, grads, momenta, t, settle=3)
        assert grid.step.shape == grid.noise_scale.shape == (len(momenta), len(grads))
        g, m = np.meshgrid(grads, momenta)
        x = F.surface_features(jnp.zeros_like(g), jnp.asarray(g), jnp.asarray(m), t, F.TYPICAL["layer"],
                               F.TYPICAL["batch"], F.TYPICAL["dormancy"])
        carry = None
        for _ in range(3 + 1):  # settled over 3 steps, then the step shown
            s = F.open_surface(meta, x, carry)
            carry = s.carry
        np.testing.assert_allclose(grid.step, s.step, rtol=1e-6)
    assert np.all(np.diff(F.grid_values()) > 0) and not np.any(F.grid_values() == 0)


def test_dormant_fraction_is_opens():
    for seed in SEEDS:
        key = jax.random.PRNGKey(seed)
        units = 3 + seed % 7
        level = float(jax.random.uniform(key, (), minval=0.01, maxval=10.0))
        # a layer whose units are equally active has none dormant
        assert float(dormant_fraction({"k": jnp.full((units,), level), "b": jnp.full((units,), level)})) == 0.0
        # dead units (0 on the whole minibatch) are dormant, counted in every tensor of their layer; a one-unit
        # head is never dormant but counts in the denominator, as in OPEN's train.py
        a = jnp.abs(jax.random.normal(key, (units,))) + 0.1
        dead = seed % (units - 1)  # at least two units stay alive
        a = a.at[:dead].set(0.0)
        acts = {"kernel": a, "bias": a, "head": jnp.ones((1,))}
        assert float(dormant_fraction(acts)) == pytest.approx(2 * dead / (2 * units + 1))
        # below tau relative to the layer's mean: dormant; well above: not
        b = a.at[-1].set(TAU * 0.01 * float(jnp.mean(a)))
        assert float(dormant_fraction({"x": b})) == pytest.approx((dead + 1) / units)


def _random_open_file(path):
    objective = Objective(optimizer=OPTIMIZERS.make("open"))
    meta = objective.zero_meta()
    meta["optimizer"] = random_meta(jax.random.PRNGKey(3), 0.5)
    save_objective(path, objective, meta)
    return objective, meta


def _assert_png(path):
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300
    assert image[..., :3].std() > 0.05  # not blank


TIMESTEPS = 4 * 128 * 3  # CartPole's preset: 4 envs x 128 steps, so 3 updates


@pytest.fixture(scope="module")
def open_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("open") / "open.msgpack"
    return (path, *_random_open_file(path))


@pytest.fixture(scope="module")
def dormancy_result(open_file):
    """One training of OPEN and of Adam (the slow part), shared by the tests below."""
    _, objective, meta = open_file
    return dormancy_runs(objective, meta, "CartPole-v1", TIMESTEPS, 2)


@pytest.fixture(scope="module")
def env_plot(open_file, dormancy_result, tmp_path_factory):
    """`plot --env` of the random OPEN file, drawn once (OPEN's surfaces are its slow part): the CLI's call of
    `dormancy_runs` is recorded and answered with `dormancy_result`. -> (figure folder, recorded calls)."""
    from metadisco.analysis import dormancy

    calls = []

    def recorded(*args, **kwargs):
        calls.append(kwargs)
        return dormancy_result

    out = tmp_path_factory.mktemp("plot") / "fig"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dormancy, "dormancy_runs", recorded)
        patch.setattr(F, "save_figure", _titled(F.save_figure, TITLES["published"]))
        assert main(["plot", str(open_file[0]), "--out", str(out), "--env", "CartPole-v1",
                     "--timesteps", str(TIMESTEPS), "--seeds", "2"]) == 0
    return out, calls


TITLES = {"published": {}, "residual": {}}  # figure name -> its title and axis labels, as `plot` drew them


def _titled(save, titles: dict):
    """`save_figure` that also keeps each figure's title and axis labels in `titles` (a colorbar's label is its
    axes' ylabel)."""
    def saved(fig, path, dpi):
        titles[path.name] = " ".join([fig.get_suptitle(), *(ax.get_ylabel() for ax in fig.axes)])
        return save(fig, path, dpi)
    return saved


@pytest.mark.heavy
@pytest.mark.slow  # 77 s on 2 cores
def test_plot_draws_opens_figures_for_a_random_objective(env_plot):
    """OPEN's own figures instead of optimizer.png (which steps an optimiser without a trainer's context). That
    nothing trains without --env is test_analysis.py's test_plot_builtin_and_lpo (its exact set of names)."""
    out, _ = env_plot
    names = {p.name for p in out.iterdir()}
    assert {"open_update.png", "open_noise.png", "value_loss.png"} <= names
    assert "optimizer.png" not in names
    for name in ("open_update.png", "open_noise.png"):
        _assert_png(out / name)


@pytest.mark.slow  # 19 s on 2 cores
def test_dormancy_runs_train_open_and_adam(dormancy_result):
    """`dormancy_runs` checked: both optimisers, a fraction per update, and Adam wrapped by the recorder trains
    as Adam alone (the recorder returns Adam's updates unchanged and keeps the minibatch permutations)."""
    result = dormancy_result
    assert set(result["runs"]) == {"open", "adam"}
    for run in result["runs"].values():
        assert run["dormant"].shape == run["episode_return"].shape == (2, 3)
        assert np.all((run["dormant"] >= 0) & (run["dormant"] <= 1))
    config = resolve_config("CartPole-v1", timesteps=TIMESTEPS)
    plain = jax.jit(jax.vmap(make_train(config, make_env("CartPole-v1"), Objective()), in_axes=(0, None)))(
        seed_keys(2), Objective().zero_meta())
    np.testing.assert_allclose(result["runs"]["adam"]["episode_return"], plain.metrics.episode_return, rtol=1e-4,
                               equal_nan=True)


@pytest.mark.slow  # 47-54 s on 2 cores (the shared env_plot)
def test_plot_env_trains_open_and_adam_and_draws_their_dormancy(env_plot):
    """`plot --env` asks `dormancy_runs` for its arguments and draws dormancy.png from the result."""
    out, calls = env_plot
    assert calls == [{"env_id": "CartPole-v1", "timesteps": TIMESTEPS, "seeds": 2}]
    _assert_png(out / "dormancy.png")


@pytest.mark.parametrize("argv,message", [
    (["--timesteps", "1000"], "add --env"),
    (["--env", "NoSuchEnv-v0"], "env"),
])
def test_plot_env_bad_input(tmp_path, capsys, argv, message):
    assert main(["plot", "ppo", "--out", str(tmp_path / "x"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_plot_env_refuses_a_td_objective(tmp_path, capsys):
    assert main(["plot", "pqn", "--out", str(tmp_path / "x"), "--env", "CartPole-v1"]) == 2
    assert "which algorithm pqn's trainer does not give" in capsys.readouterr().err



@pytest.mark.slow  # 28 s on 2 cores
def test_a_residual_objectives_figures_say_they_draw_the_residual(env_plot, tmp_path, monkeypatch):
    """With `residual: true` the surface is the term subtracted from Adam's update (at the ES's start: zero, a flat
    surface, while the optimiser is Adam): `plot` titles its figures so, and an OPEN-as-published file's not."""
    objective = Objective(optimizer=OPTIMIZERS.make("open", residual=True))
    meta = objective.zero_meta()
    meta["optimizer"] = random_meta(jax.random.PRNGKey(4), 0.5)
    save_objective(tmp_path / "residual.msgpack", objective, meta)
    monkeypatch.setattr(F, "save_figure", _titled(lambda fig, path, dpi: path, TITLES["residual"]))
    assert main(["plot", str(tmp_path / "residual.msgpack"), "--out", str(tmp_path / "fig")]) == 0
    residual, published = TITLES["residual"], TITLES["published"]
    assert "subtracted from Adam's update" in residual["open_update.png"] and "residual u" in residual[
        "open_update.png"]
    assert "added to Adam's update" in residual["open_noise.png"]
    for figure in ("open_update.png", "open_noise.png"):
        assert "Adam" not in published[figure] and "residual" not in published[figure]
