"""OPEN's optimiser (`metadisco.objectives.open_optimizer`), checked for many random inputs: its network equals
flax's GRUCell and Sequential MLP and its meta-parameters flatten in OPEN's order; updates have the params'
shapes, are zero-mean over all parameters, are zero at zero meta-parameters (and Adam's exactly with
`residual`); the learned noise reaches the actor only; the trainer gives it a context and, through a whole tiny
run, `residual` at zero trains exactly as Adam."""

import functools
import json
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from metadisco.core.errors import UserError
from metadisco.envs import make_env
from metadisco.objectives import OPTIMIZERS, Objective, OptimizerContext, OptimizerInputs, Progress
from metadisco.objectives import open_optimizer as O
from metadisco.objectives.options import meta_parameter_count
from metadisco.trainers import check_objective, make_train
from metadisco.trainers.config import TrainConfig, train_config
from metadisco.trainers.metrics import named_numbers
from metadisco.trainers.networks import ActorCritic, optimizer_layout, unit_activations

SEEDS = range(12)
OBS = 5
INPUTS = OptimizerInputs(3e-3, 0.5, 100)
PROGRESS = Progress(jnp.float32(0.0), jnp.float32(10.0))


def flax_reference(gru: int, hidden: int, key):
    """OPEN's own modules (network.py: nn.GRUCell(gru) and this nn.Sequential) and their initial meta tree."""
    cell = nn.GRUCell(features=gru)
    mlp = nn.Sequential([nn.Dense(hidden), nn.LayerNorm(), nn.relu, nn.Dense(hidden), nn.LayerNorm(), nn.relu,
                         nn.Dense(3)])
    k1, k2 = jax.random.split(key)
    # flax's own init, compiled (one program per size instead of each of its operations)
    meta = {"params": jax.jit(mlp.init)(k1, jnp.zeros([gru])),
            "gru_params": jax.jit(cell.init)(k2, cell.initialize_carry(k2, (1,)), jnp.zeros([O.NUM_INPUTS]))}
    return cell, mlp, meta


def random_like(tree, key, scale=1.0):
    leaves, treedef = jax.tree.flatten(tree)
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(treedef, [scale * jax.random.normal(k, x.shape, jnp.float32)
                                        for k, x in zip(keys, leaves, strict=True)])


def agent(key, discrete: bool):
    network = ActorCritic(3, discrete, (8, 6), "tanh")
    return network, jax.jit(network.init)(key, jnp.zeros((1, OBS)))


@functools.cache
def base_params(discrete: bool):
    return agent(jax.random.PRNGKey(0), discrete)[1]


@functools.cache
def stepper(piece, discrete: bool):
    """jit(meta, grads, params, obs, training, batch, key, state) -> (updates, state) of `piece` on an agent's
    params, its context built as the PPO trainer builds it (activations of `obs`, the network's layout)."""
    network = ActorCritic(3, discrete, (8, 6), "tanh")
    mask, layers = optimizer_layout(base_params(discrete))

    def step(meta, grads, params, obs, training, batch, key, state):
        tx = piece(meta, INPUTS, PROGRESS)
        _, captured = network.apply(params, obs, capture_intermediates=True, mutable=["intermediates"])
        acts = unit_activations(network, params, captured["intermediates"])
        context = OptimizerContext(acts, mask, layers, training, batch, key)
        return tx.update(grads, state, params, context=context)

    return jax.jit(step)


@functools.cache
def case_maker(discrete: bool, meta_scale: float, piece):
    base = base_params(discrete)  # outside the trace: a cached value, not a tracer

    @jax.jit
    def make(seed):
        keys = jax.random.split(jax.random.PRNGKey(seed), 6)
        params = base
        params = jax.tree.map(lambda p, q: p + 0.3 * q, params, random_like(params, keys[1]))
        grads = random_like(params, keys[2], scale=10.0 ** jax.random.uniform(keys[3], (), minval=-4, maxval=0))
        meta = random_like(piece.zero_meta(), keys[4], meta_scale)
        obs = jax.random.normal(keys[5], (16, OBS))
        training, batch = (seed % 5) / 4, (seed % 4) / 3
        return meta, grads, params, obs, jnp.float32(training), jnp.float32(batch), keys[0]

    return make


def case(seed: int, discrete: bool, meta_scale: float = 0.5, piece=None):
    """A random (meta, grads, params, obs, training, batch, key) for `seed`."""
    return case_maker(discrete, meta_scale, piece or OPTIMIZERS.make("open"))(seed)


def run_steps(piece, discrete, meta, grads, params, obs, training, batch, key, steps=3):
    step = stepper(piece, discrete)
    state = piece(meta, INPUTS, PROGRESS).init(params)
    out = []
    for i in range(steps):
        updates, state = step(meta, grads, params, obs, training, batch, jax.random.fold_in(key, i), state)
        out.append(updates)
        params = optax.apply_updates(params, updates)
        grads = jax.tree.map(lambda g: 0.9 * g, grads)
    return out


def flat(tree):
    return np.concatenate([np.ravel(np.asarray(x)) for x in jax.tree.leaves(tree)])


# ----- the network and its meta-parameters, against OPEN's flax modules -----

def test_meta_parameter_counts_are_opens():
    piece = OPTIMIZERS.make("open")
    assert meta_parameter_count(piece) == 1211
    zero = piece.zero_meta()
    assert sum(x.size for x in jax.tree.leaves(zero["gru_params"])) == 680
    assert sum(x.size for x in jax.tree.leaves(zero["params"])) == 531
    assert meta_parameter_count(OPTIMIZERS.make("open", gru=16, hidden=32)) == 3571  # OPEN's --larger
    assert all(not np.any(x) for x in jax.tree.leaves(zero))


@pytest.mark.parametrize("gru,hidden", [(8, 16), (16, 32), (3, 5)])
def test_meta_tree_and_flattening_order_are_flaxs(gru, hidden):
    """Same tree as OPEN's GRU_Opt.init, so the same flat order: a vector made from flax's tree unflattens here
    into the same numbers at the same paths (what OPEN's eval.py does with a released .npy)."""
    _, _, reference = flax_reference(gru, hidden, jax.random.PRNGKey(gru))
    ours = OPTIMIZERS.make("open", gru=gru, hidden=hidden).zero_meta()
    assert jax.tree.structure(reference) == jax.tree.structure(ours)
    assert jax.tree.map(jnp.shape, reference) == jax.tree.map(jnp.shape, ours)
    vector = np.asarray(jax.flatten_util.ravel_pytree(reference)[0])
    meta = O.meta_from_vector(vector, gru, hidden)
    jax.tree.map(np.testing.assert_array_equal, meta, reference)
    np.testing.assert_array_equal(O.meta_to_vector(meta), vector)
    assert O.sizes_for_length(vector.size) == ((gru, hidden) if (gru, hidden) != (3, 5) else None)


@pytest.mark.slow  # 15 s on 2 cores
@pytest.mark.parametrize("seed", SEEDS)
def test_gru_and_mlp_equal_flax_for_random_meta(seed):
    k = jax.random.split(jax.random.PRNGKey(100 + seed), 4)
    cell, mlp, reference = flax_reference(8, 16, k[0])
    meta = random_like(reference, k[1], scale=float(jax.random.uniform(k[2], (), minval=0.1, maxval=3.0)))
    x = jax.random.normal(k[3], (40, O.NUM_INPUTS)) * 3
    h = jnp.tanh(jax.random.normal(k[2], (40, 8)))
    h_flax, out = cell.apply(meta["gru_params"], h, x)
    # metadisco's network runs features first ([19, P]); flax's rows are its transpose. The contraction sums in
    # another order, and pre-activations reach ~1e2 here (meta scale up to 3, inputs x 3): float32 rounding ~1e-5.
    np.testing.assert_allclose(O.gru_cell(meta["gru_params"], h.T, x.T), h_flax.T, rtol=1e-5, atol=1e-5)
    # The LayerNorms' means are contractions here (flax: reductions), and outputs reach ~1e2 at these scales:
    # rounding relative to the largest output.
    expected = mlp.apply(meta["params"], out).T
    tolerance = {"rtol": 1e-5, "atol": 1e-5 * float(np.abs(expected).max())}
    np.testing.assert_allclose(O.head(meta["params"], h_flax.T), expected, **tolerance)
    # and on more than one trailing axis (the figures' grids): the same numbers
    grid = O.head(meta["params"], O.gru_cell(meta["gru_params"], h.T.reshape(8, 5, 8), x.T.reshape(-1, 5, 8)))
    np.testing.assert_allclose(grid.reshape(3, 40), expected, **tolerance)


def test_features_are_opens():
    """The 15 varying inputs have unit second moment per tensor (OPEN's normaliser); the last four are the
    training, layer and batch proportions and the dormancy, not normalised."""
    key = jax.random.PRNGKey(3)
    for seed in SEEDS:
        k = jax.random.split(jax.random.fold_in(key, seed), 3)
        p, g = jax.random.normal(k[0], (7, 5)), 1e-3 * jax.random.normal(k[1], (7, 5))
        m = jax.random.normal(k[2], (6, 7, 5))
        dorm = jnp.arange(5.0)
        x = O.tensor_features(p, g, m, 0.25, 0.5, 1.0, dorm)
        assert x.shape == (19, 7, 5)
        np.testing.assert_allclose(jnp.mean(jnp.square(x[:15]), axis=(1, 2)), 1.0, rtol=1e-3)
        np.testing.assert_allclose(x[15:18], np.broadcast_to(np.reshape([0.25, 0.5, 1.0], (3, 1, 1)), (3, 7, 5)))
        np.testing.assert_array_equal(x[18], np.broadcast_to(dorm, (7, 5)))
        # sign and log-magnitude of the gradient, before normalising, are features 13 and 14
        raw = jnp.sign(g)
        np.testing.assert_allclose(x[13] / jnp.sqrt(jnp.mean(x[13] ** 2)), raw / jnp.sqrt(jnp.mean(raw ** 2)),
                                   rtol=1e-5)
        raw = jnp.log(jnp.abs(m[2]) + O.LOG_EPS)  # the third timescale's log-magnitude is feature 9
        np.testing.assert_allclose(x[9] / jnp.sqrt(jnp.mean(x[9] ** 2)), raw / jnp.sqrt(jnp.mean(raw ** 2)),
                                   rtol=1e-5)


def test_dormancy_is_unit_activation_over_the_layer_mean():
    for seed in SEEDS:
        a = jnp.abs(jax.random.normal(jax.random.PRNGKey(seed), (9,))) * (seed + 1)
        d = O.dormancy(a)
        np.testing.assert_allclose(d, a / a.mean(), rtol=1e-5)
        np.testing.assert_allclose(O.dormancy(3.0 * a), d, rtol=1e-5)
    np.testing.assert_allclose(O.dormancy(jnp.zeros(4)), jnp.ones(4))  # a dead layer: all equally dormant


# ----- updates for many random inputs -----

@pytest.mark.slow  # 22 s on 2 cores
@pytest.mark.parametrize("discrete", [True, False])
def test_updates_have_params_shapes_and_zero_mean(discrete):
    piece = OPTIMIZERS.make("open")
    for seed in SEEDS:
        meta, grads, params, *rest = case(seed, discrete)
        for updates in run_steps(piece, discrete, meta, grads, params, *rest):
            assert jax.tree.structure(updates) == jax.tree.structure(params)
            assert all(u.shape == p.shape and u.dtype == p.dtype
                       for u, p in zip(jax.tree.leaves(updates), jax.tree.leaves(params), strict=True))
            u = flat(updates)
            assert np.isfinite(u).all() and np.abs(u).max() > 0
            # OPEN makes the update zero-mean over every parameter, actor and critic together
            assert abs(u.astype(np.float64).mean()) <= 1e-5 * np.abs(u).mean()


@pytest.mark.parametrize("discrete", [True, False])
def test_zero_meta_gives_zero_updates(discrete):
    piece = OPTIMIZERS.make("open")
    for seed in SEEDS:
        _, grads, params, *rest = case(seed, discrete)
        for updates in run_steps(piece, discrete, piece.zero_meta(), grads, params, *rest):
            assert not np.any(flat(updates))


@pytest.mark.parametrize("discrete", [True, False])
def test_the_hidden_start_still_gives_zero_updates(discrete):
    """`start: hidden` draws the GRU and hidden kernels, keeps the output layer at 0: still zero updates."""
    piece = OPTIMIZERS.make("open")
    for seed in SEEDS:
        start = piece.start_meta(jax.random.PRNGKey(seed), 1.0)
        assert jax.tree.structure(start) == jax.tree.structure(piece.zero_meta())
        assert np.any(start["gru_params"]["params"]["ir"]["kernel"])
        assert not np.any(flat(start["params"]["params"]["layers_6"]))
        _, grads, params, *rest = case(seed, discrete)
        for updates in run_steps(piece, discrete, start, grads, params, *rest, steps=2):
            assert not np.any(flat(updates))


@pytest.mark.slow  # 10 s on 2 cores
@pytest.mark.parametrize("discrete", [True, False])
def test_residual_at_zero_meta_is_adam_exactly(discrete):
    piece = OPTIMIZERS.make("open", residual=True)
    adam = OPTIMIZERS.make("adam")(None, INPUTS, PROGRESS)
    adam_update = jax.jit(adam.update)  # compiled like ours (eager and compiled Adam differ in the last bit)
    for seed in SEEDS:
        # the inputs drawn for `open` (the same tree as `residual`'s; its meta unused): no second case program
        _, grads, params, obs, training, batch, key = case(seed, discrete)
        ours = run_steps(piece, discrete, piece.zero_meta(), grads, params, obs, training, batch, key)
        state = adam.init(params)
        for updates in ours:
            expected, state = adam_update(grads, state, params)
            jax.tree.map(np.testing.assert_array_equal, updates, expected)
            params = optax.apply_updates(params, updates)
            grads = jax.tree.map(lambda g: 0.9 * g, grads)


@pytest.mark.parametrize("discrete", [True, False])
def test_noise_reaches_the_actor_only(discrete):
    """Two noise keys change the actor's updates entry by entry; the critic's only by the one shift that
    OPEN's global zero-mean step spreads over every parameter. Without the noise output, keys change nothing."""
    piece = OPTIMIZERS.make("open")
    step = stepper(piece, discrete)
    mask = jax.tree.leaves(optimizer_layout(base_params(discrete))[0])
    for seed in SEEDS:
        meta, grads, params, obs, training, batch, key = case(seed, discrete)
        state = piece(meta, INPUTS, PROGRESS).init(params)
        a, _ = step(meta, grads, params, obs, training, batch, key, state)
        b, _ = step(meta, grads, params, obs, training, batch, jax.random.fold_in(key, 99), state)
        diff = [np.ravel(np.asarray(x) - np.asarray(y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b),
                                                                         strict=True)]
        critic = np.concatenate([d for d, m in zip(diff, mask, strict=True) if not m])
        actor = np.concatenate([d for d, m in zip(diff, mask, strict=True) if m])
        np.testing.assert_allclose(critic, critic[0], atol=1e-6 * np.abs(actor).max())
        assert np.std(actor) > 100 * np.std(critic)

        quiet = jax.tree.map(jnp.asarray, meta)
        last = quiet["params"]["params"]["layers_6"]
        last["kernel"], last["bias"] = last["kernel"].at[:, 2].set(0.0), last["bias"].at[2].set(0.0)
        a, _ = step(quiet, grads, params, obs, training, batch, key, state)
        b, _ = step(quiet, grads, params, obs, training, batch, jax.random.fold_in(key, 99), state)
        jax.tree.map(np.testing.assert_array_equal, a, b)


@pytest.mark.slow  # 17 s on 2 cores
def test_towers_are_clipped_separately():
    params = base_params(True)
    mask, _ = optimizer_layout(params)
    m = jax.tree.leaves(mask)
    for seed in SEEDS:
        grads = random_like(params, jax.random.PRNGKey(seed), scale=10.0 ** (seed % 4 - 2))
        clipped = O.clip_towers(grads, mask, 0.5)
        for tower in (1.0, 0.0):
            given = [g for g, t in zip(jax.tree.leaves(grads), m, strict=True) if t == tower]
            got = [g for g, t in zip(jax.tree.leaves(clipped), m, strict=True) if t == tower]
            expected, _ = optax.clip_by_global_norm(0.5).update(given, optax.EmptyState())
            for x, y in zip(got, expected, strict=True):
                np.testing.assert_allclose(x, y, rtol=1e-6)


def test_the_update_reads_its_context():
    """Training proportion, batch proportion and activations each change OPEN's update (random meta)."""
    piece = OPTIMIZERS.make("open")
    step = stepper(piece, True)
    meta, grads, params, obs, training, batch, key = case(0, True)
    state = piece(meta, INPUTS, PROGRESS).init(params)
    base = flat(step(meta, grads, params, obs, training, batch, key, state)[0])
    for changed in [(obs, training + 0.5, batch), (obs, training, batch + 0.5), (obs * 3 + 1, training, batch)]:
        assert not np.allclose(flat(step(meta, grads, params, changed[0], changed[1], changed[2], key, state)[0]),
                               base)


def test_open_needs_the_context():
    params = base_params(True)
    tx = OPTIMIZERS.make("open")(OPTIMIZERS.make("open").zero_meta(), INPUTS, PROGRESS)
    with pytest.raises(ValueError, match="OptimizerContext"):
        tx.update(params, tx.init(params), params)


def test_options_are_checked():
    with pytest.raises(UserError, match="gru"):
        OPTIMIZERS.make("open", gru=0)
    with pytest.raises(UserError, match="gru"):
        OPTIMIZERS.make("open", gru=10**6)
    with pytest.raises(UserError, match="hidden"):
        OPTIMIZERS.make("open", hidden="abc")
    with pytest.raises(UserError, match="100"):
        O.meta_from_vector(np.zeros(100, np.float32))


# ----- the trainer's seam -----

@pytest.mark.slow  # 21 s on 2 cores
def test_layout_and_activations_follow_each_tower():
    for discrete in (True, False):
        network, params = agent(jax.random.PRNGKey(1), discrete)
        mask, layers = optimizer_layout(params)
        p = params["params"]
        expected_actor = {"actor_layers_0": 0.0, "actor_layers_1": 0.5, "policy_head": 1.0} if discrete else \
            {"actor_layers_0": 0.0, "actor_layers_1": 1 / 3, "policy_head": 2 / 3, "log_std": 1.0}
        for name, prop in {**expected_actor, "critic_layers_0": 0.0, "critic_layers_1": 0.5,
                           "value_head": 1.0}.items():
            assert jax.tree.leaves(layers["params"][name]) == pytest.approx([prop] * len(jax.tree.leaves(p[name])))
            assert set(jax.tree.leaves(mask["params"][name])) == {1.0 if name in expected_actor else 0.0}
        obs = jax.random.normal(jax.random.PRNGKey(2), (4, 7, OBS))
        _, captured = network.apply(params, obs, capture_intermediates=True, mutable=["intermediates"])
        acts = unit_activations(network, params, captured["intermediates"])
        for (path, x), leaf in zip(jax.tree_util.tree_flatten_with_path(acts)[0], jax.tree.leaves(params),
                                   strict=True):
            assert x.shape == ((1,) if "log_std" in jax.tree_util.keystr(path) else leaf.shape[-1:])
        hidden = jnp.tanh(obs @ p["actor_layers_0"]["kernel"] + p["actor_layers_0"]["bias"])
        np.testing.assert_allclose(acts["params"]["actor_layers_0"]["kernel"],
                                   jnp.abs(hidden).mean(axis=(0, 1)), rtol=1e-5)


def test_pqn_refuses_an_optimiser_that_needs_activations():
    from metadisco.objectives import TRACES

    objective = Objective(optimizer=OPTIMIZERS.make("open"), trace=TRACES.make("peng"))
    with pytest.raises(UserError, match="activations"):
        check_objective(TrainConfig(algorithm="pqn"), objective)


CONFIG = train_config(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 4, update_epochs=2, num_minibatches=2,
                     hidden_sizes=(8, 8), lr=0.02, rollout_unroll=1)


@functools.cache
def trained(name: str, meta_seed: int | None = None):
    objective = Objective() if name == "adam" else Objective(optimizer=OPTIMIZERS.make("open", residual=True))
    meta = objective.zero_meta()
    if meta_seed is not None:
        meta["optimizer"] = random_like(meta["optimizer"], jax.random.PRNGKey(meta_seed), 0.5)
    train = trainer(objective)
    return jax.tree.map(np.asarray, train(jax.random.PRNGKey(7), meta))


@functools.cache
def trainer(objective):
    return jax.jit(make_train(CONFIG, make_env("CartPole-v1"), objective))


@pytest.mark.heavy
@pytest.mark.slow  # 48 s on 2 cores
def test_residual_open_at_zero_trains_as_adam():
    """A whole run: the context is built and passed, and at zero meta-parameters the residual start is Adam
    (to float rounding: the loss is compiled with its activations captured)."""
    adam, ours = trained("adam"), trained("open")
    want = named_numbers(adam.metrics)
    for field, got in named_numbers(ours.metrics).items():
        np.testing.assert_allclose(got, want[field], rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=field)
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6), ours.params, adam.params)


@pytest.mark.slow  # 18 s on 2 cores
def test_random_meta_trains_and_differs_from_adam():
    ours, adam = trained("open", meta_seed=1), trained("adam")
    assert all(np.isfinite(x).all() for x in jax.tree.leaves(ours.params))
    assert np.isfinite(ours.metrics.losses["actor_loss"]).all()
    assert any(not np.allclose(x, y) for x, y in zip(jax.tree.leaves(ours.params), jax.tree.leaves(adam.params),
                                                      strict=True))


# ----- against OPEN's own code (issue 44, item 2) -----

OPEN_REFERENCE = Path(__file__).resolve().parents[1] / "data" / "open_reference.json"


def load_reference(path: Path) -> dict[str, np.ndarray]:
    """tests/data/open_reference.json: {name: {"shape", "data"}} of float32 arrays, each number exact."""
    return {k: np.asarray(v["data"], np.float32).reshape(v["shape"]) for k, v in json.loads(path.read_text()).items()}
OPEN_LAYERS = {"actor": ("actor_layers_0", "actor_layers_1", "policy_head"),
               "critic": ("critic_layers_0", "critic_layers_1", "value_head")}


def from_open_layout(record, prefix: str) -> dict:
    """Arrays `prefix/{actor,critic}/Dense_i/{kernel,bias}` of OPEN's two towers -> an ActorCritic params tree."""
    return {"params": {name: {leaf: jnp.asarray(record[f"{prefix}/{tower}/Dense_{i}/{leaf}"])
                              for leaf in ("kernel", "bias")}
                       for tower, names in OPEN_LAYERS.items() for i, name in enumerate(names)}}


@pytest.mark.slow  # 15 s on 2 cores
def test_update_equals_opens_own_code():
    """OPEN's `GRU_Opt.update` (its network.py, run unchanged by tests/data/record_open_reference.py, whose
    docstring has the command) on random meta-parameters, params, raw gradients (clipped per tower, some steps
    over the clip), activations with a dead unit, and train.py's training / batch / layer proportions, for 8
    steps: metadisco's `open` optimiser, given the same inputs through the trainer's own layout
    (`optimizer_layout`), makes the same updates. With the noise on, OPEN's update differs from its noiseless one
    by o2 * 1e-3 * N(0, 1) on the actor minus its mean, o2 being metadisco's third output."""
    record = load_reference(OPEN_REFERENCE)
    meta = O.meta_from_vector(record["meta"])
    params = from_open_layout(record, "params")
    mask, layers = optimizer_layout(params)
    tx = OPTIMIZERS.make("open")(meta, OptimizerInputs(3e-3, 0.5, 100), PROGRESS)
    state = tx.init(params)
    no_noise = jax.tree.map(lambda _: 0.0, mask)
    steps = len(record["training_prop"])

    # Each compiled once for the 8 steps (as the trainer runs them), the layout held as constants (OPEN reads the
    # layer proportions as Python floats).
    @jax.jit
    def reference_step(grads, momenta, carry, params, acts, training, batch, key):
        # the optimiser's own update, its noise off: the context's actor mask also names the towers to clip, so
        # the clip is the optimiser's (`clip_towers` on the real layout) and the update `open_update` unmasked
        clipped = O.clip_towers(grads, mask, 0.5)
        context = OptimizerContext(acts, no_noise, layers, training, batch, key)
        return O.open_update(meta, clipped, momenta, carry, params, context)

    @jax.jit
    def full_step(grads, state, params, acts, training, batch, key):
        return tx.update(grads, state, params, context=OptimizerContext(acts, mask, layers, training, batch, key))

    for k in range(steps):
        acts = {"params": {name: {leaf: jnp.asarray(record[f"act{k}/{tower}/Dense_{i}"]) for leaf in ("kernel", "bias")}
                           for tower, names in OPEN_LAYERS.items() for i, name in enumerate(names)}}
        training, batch = jnp.float32(record["training_prop"][k]), jnp.float32(record["batch_prop"][k])
        grads = from_open_layout(record, f"grad{k}")
        u, momenta, carry = reference_step(grads, state.momenta, state.carry, params, acts, training, batch,
                                           jax.random.PRNGKey(k))
        # OPEN's recorded update is old - new params in float32: exact to half an ulp of the params (~1.5e-8).
        jax.tree.map(lambda x, ref: np.testing.assert_allclose(x, ref, rtol=1e-4, atol=1e-7), u,
                     from_open_layout(record, f"update{k}"))
        # and the whole transformation, noise on, moves the critic as OPEN did up to the noise's mean
        full, _ = full_step(grads, state, params, acts, training, batch, jax.random.PRNGKey(k))
        critic = [flat(x) for x, m in zip(jax.tree.leaves(full), jax.tree.leaves(mask), strict=True) if not m]
        reference = [flat(x) for x, m in zip(jax.tree.leaves(u), jax.tree.leaves(mask), strict=True) if not m]
        shift = np.concatenate(critic) + np.concatenate(reference)
        np.testing.assert_allclose(shift, shift[0], atol=1e-7)
        state = O.OpenState(momenta, carry, state.adam)
        params = jax.tree.map(jnp.subtract, params, u)
    last_u = from_open_layout(record, f"update{steps - 1}")
    residual = jax.tree.map(jnp.subtract, from_open_layout(record, "noisy_update"), last_u)
    o2 = O.head(meta["params"], state.carry)[2]  # the carry after the last step, in the params' leaf order
    r, actor = flat(residual), flat(jax.tree.map(lambda m, x: jnp.full(x.shape, m), mask, residual)) > 0
    np.testing.assert_allclose(r[~actor], r[~actor][0], atol=1e-7)  # the critic: only the mean's shift
    z = (r[actor] - r[~actor][0]) / (np.asarray(o2)[actor] * O.STEP_MULT)
    assert z.size > 400
    assert abs(np.mean(z)) < 0.15 and 0.85 < np.std(z) < 1.15
