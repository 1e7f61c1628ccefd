"""`metadisco export`: the exported plain-JAX functions, imported from a temporary directory as other people's
code imports them, equal metadisco's own pieces on random batches (drift, value loss, optimiser updates), and
DiscoBench's loss.py equals the PPO trainer's loss on the same network, parameters and minibatch."""

import ast
import importlib.util
import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import metadisco
from metadisco.core.errors import UserError
from metadisco.envs.registry import make_env
from metadisco.objectives import DRIFTS, OPTIMIZERS, VALUE_LOSSES, DriftInputs, Objective, Progress, ValueLossInputs
from metadisco.objectives.export import About, export_files
from metadisco.objectives.export.literals import LITERAL_LIMIT, float32_literal
from metadisco.objectives.expression import DPO_EXPRESSION, PPO_EXPRESSION
from metadisco.objectives.objective import BUILTIN_OBJECTIVES
from metadisco.objectives.registry import OptimizerInputs, Piece
from metadisco.trainers.algorithm import check_exportable
from metadisco.trainers.hyper import hyper_of
from metadisco.trainers.networks import make_network
from metadisco.trainers.ppo import Batch, make_ppo_trainer
from tests.tiny_train import TINY

NUM_BATCHES = 8
ABOUT = About("test", "test", None, metadisco.__version__)


def load(tmp_path, text: str, name: str):
    """The module `text`, written to `tmp_path/name.py` and imported from that path alone."""
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"exported_{name}_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exported(tmp_path, objective, meta, fmt="jax"):
    files = export_files(objective, meta, ABOUT, fmt)
    for name, text in files.items():
        if name.endswith(".py"):
            assert_no_metadisco_import(text)
    main = "objective.py" if fmt == "jax" else "loss.py"
    return load(tmp_path, files[main], f"{fmt}_{main[:-3]}"), files


def assert_no_metadisco_import(text: str) -> None:
    for node in ast.walk(ast.parse(text)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        assert not any(n.split(".")[0] == "metadisco" for n in names), names


def random_meta(piece, key, scale=0.5):
    leaves, tree = jax.tree.flatten(piece.zero_meta())
    keys = jax.random.split(key, max(len(leaves), 1))
    return jax.tree.unflatten(tree, [scale * jax.random.normal(k, x.shape) for k, x in zip(keys, leaves, strict=False)])


def batches(seed: int, n=1024):
    """Ratios log-uniform on [e^-2, e^2] (a few exactly 1), advantages normal, progress uniform, N in [10, 5000]."""
    for key in jax.random.split(jax.random.PRNGKey(seed), NUM_BATCHES):
        k1, k2, k3, k4 = jax.random.split(key, 4)
        ratio = jnp.exp(jax.random.uniform(k1, (n,), minval=-2.0, maxval=2.0)).at[:8].set(1.0)
        adv = 2.0 * jax.random.normal(k2, (n,))
        fraction = jax.random.uniform(k3, ())
        num_updates = jnp.float32(jnp.round(10.0 + 4990.0 * jax.random.uniform(k4, ())))
        yield ratio, adv, Progress(fraction, num_updates)


def objective_with(**pieces) -> Objective:
    return Objective(**pieces)


# ---------------------------------------------------------------------------------------------------------
# drifts

CUSTOM_EXPRESSION = ("where(A >= 0, min(square(r - 1) * A, exp(square(log(r))) - 1), "
                     "abs(A) * (r ** 1.5 - 1 - 1.5 * (r - 1)) + sign(A) * (sqrt(r) - 1) ** 2 * c)", (("c", -0.25),))
DRIFT_CASES = [
    ("ppo", {}), ("ppo", {"eps": 0.1}), ("dpo", {}), ("dpo", {"alpha": 1.5, "beta": 0.3}),
    ("lpo", {}), ("lpo", {"hidden": 16}), ("talpo", {}), ("talpo", {"hidden": 8, "horizon": False}),
    ("learned_dpo", {}), ("learned_dpo", {"progress": False}),
    ("expression", {"expression": PPO_EXPRESSION[0], "constants": PPO_EXPRESSION[1]}),
    ("expression", {"expression": DPO_EXPRESSION[0], "constants": DPO_EXPRESSION[1]}),
    ("expression", {"expression": CUSTOM_EXPRESSION[0], "constants": CUSTOM_EXPRESSION[1]}),
    ("lpo", {"floor": 0.5}), ("talpo", {"hidden": 8, "horizon": False, "floor": 0.3}),
]


@pytest.mark.parametrize("case", range(len(DRIFT_CASES)))
def test_exported_drift_equals_the_piece(tmp_path, case):
    kind, options = DRIFT_CASES[case]
    piece = DRIFTS.make(kind, **options)
    meta = random_meta(piece, jax.random.PRNGKey(case))
    objective = objective_with(drift=piece)
    module, _ = exported(tmp_path, objective, {**objective.zero_meta(), "drift": meta})
    for ratio, adv, progress in batches(case):
        want = piece(meta, DriftInputs(ratio, adv), progress)
        extra = {"lpo": (), "talpo": (progress.fraction, progress.num_updates)[:1 + piece.sees_horizon],
                 "learned_dpo": (progress.fraction,)[:int(getattr(piece, "progress", False))]}.get(kind, ())
        got = module.drift(ratio, adv, *extra)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        per_sample = module.actor_loss(ratio, adv, *extra)
        np.testing.assert_array_equal(np.asarray(per_sample), np.asarray(-(ratio * adv - want)))
    reads = kind == "talpo" or (kind == "learned_dpo" and piece.progress)
    assert module.READS_PROGRESS is reads


def test_the_exported_drift_at_zero_meta_parameters_is_the_baseline(tmp_path):
    """LPO at zero meta-parameters exports PPO's values; learned DPO at zero, DPO's."""
    ppo, _ = exported(tmp_path, *(lambda o: (o, o.zero_meta()))(objective_with(drift=DRIFTS.make("lpo"))))
    dpo, _ = exported(tmp_path, *(lambda o: (o, o.zero_meta()))(objective_with(drift=DRIFTS.make("learned_dpo"))))
    for ratio, adv, progress in batches(7):
        want_ppo = DRIFTS.make("ppo")({}, DriftInputs(ratio, adv), progress)
        want_dpo = DRIFTS.make("dpo")({}, DriftInputs(ratio, adv), progress)
        np.testing.assert_array_equal(np.asarray(ppo.drift(ratio, adv)), np.asarray(want_ppo))
        np.testing.assert_array_equal(np.asarray(dpo.drift(ratio, adv, progress.fraction)), np.asarray(want_dpo))


# ---------------------------------------------------------------------------------------------------------
# value losses

VALUE_CASES = [("l2", {}), ("asymmetric_l2", {"over": 2.0, "under": 0.5}), ("clipped_l2", {}),
               ("clipped_l2", {"clip_eps": 0.05})] + [
    ("learned", {"form": form, "input": inp, "progress": progress})
    for form, inp, progress in itertools.product(("add", "scale"), ("raw", "symlog"), (False, True))]


def value_batches(seed: int, n=1024):
    for ratio, _, progress in batches(seed, n):
        key = jax.random.PRNGKey(int(1e6 * float(progress.fraction)))
        k1, k2 = jax.random.split(key)
        target = 10.0 * jax.random.normal(k1, (n,))
        old_value = target + 3.0 * jax.random.normal(k2, (n,))
        value = old_value + jnp.log(ratio)  # moves of up to +-2 around the rollout's value
        yield value, old_value, target, progress


def test_an_export_carries_the_pieces_own_functions_each_defined_once(tmp_path):
    """One copy of the maths: the exported module holds the source of the functions the pieces call, verbatim, and
    a function two pieces share (the dense stack of LPO's net and of the learned value loss) once."""
    import inspect

    from metadisco.objectives.lpo import learned_drift, talpo_features
    from metadisco.objectives.mlp import residual_mlp
    from metadisco.rl.nn import mlp

    objective = objective_with(drift=DRIFTS.make("talpo", hidden=8), value_loss=VALUE_LOSSES.make("learned"))
    for fmt, name in (("jax", "objective.py"), ("discobench", "loss.py")):
        text = export_files(objective, objective.zero_meta(), ABOUT, fmt)[name]
        for function in (learned_drift, talpo_features, residual_mlp, mlp):
            assert inspect.getsource(function).rstrip() in text, (fmt, function.__name__)
        defined = [node.name for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)]
        assert len(defined) == len(set(defined)), fmt
        assert defined.count("mlp") == 1


@pytest.mark.parametrize("case", range(len(VALUE_CASES)))
def test_exported_value_loss_equals_the_piece(tmp_path, case):
    kind, options = VALUE_CASES[case]
    piece = VALUE_LOSSES.make(kind, **options)
    meta = random_meta(piece, jax.random.PRNGKey(100 + case))
    objective = objective_with(value_loss=piece)
    module, _ = exported(tmp_path, objective, {**objective.zero_meta(), "value_loss": meta})
    for value, old_value, target, progress in value_batches(case):
        want = piece(meta, ValueLossInputs(value, old_value, target), progress)
        extra = (progress.fraction,) if getattr(piece, "progress", False) else ()
        got = module.value_loss(value, old_value, target, *extra)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_a_large_learned_value_loss_is_embedded_as_base64_and_reads_back_exactly(tmp_path):
    piece = VALUE_LOSSES.make("learned", hidden=(80, 80))
    meta = random_meta(piece, jax.random.PRNGKey(5))
    assert meta["dense_1"]["kernel"].size > LITERAL_LIMIT
    objective = objective_with(value_loss=piece)
    module, files = exported(tmp_path, objective, {**objective.zero_meta(), "value_loss": meta})
    assert "base64.b64decode" in files["objective.py"]
    np.testing.assert_array_equal(np.asarray(module.VALUE_KERNEL_1), np.asarray(meta["dense_1"]["kernel"]))
    for value, old_value, target, progress in value_batches(3):
        want = piece(meta, ValueLossInputs(value, old_value, target), progress)
        np.testing.assert_array_equal(np.asarray(module.value_loss(value, old_value, target)), np.asarray(want))


def test_float32_literals_read_back_exactly():
    """Every float32 bit pattern drawn (normal, tiny, huge, subnormal) reads back from its literal unchanged."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    values = values[np.isfinite(values)]
    back = np.asarray([float(float32_literal(v)) for v in values], np.float64).astype(np.float32)
    np.testing.assert_array_equal(back.view(np.uint32), values.view(np.uint32))


# ---------------------------------------------------------------------------------------------------------
# optimisers


@pytest.mark.parametrize("kind,options", [("adam", {}), ("adam", {"eps": 1e-8}), ("radam", {})])
def test_exported_optimizer_updates_equal_the_piece(tmp_path, kind, options):
    piece = OPTIMIZERS.make(kind, **options)
    objective = objective_with(optimizer=piece)
    module, _ = exported(tmp_path, objective, objective.zero_meta())
    schedule = lambda count: 3e-3 * (1.0 - count / 50.0)
    ours = piece({}, OptimizerInputs(schedule, 0.5, 50), Progress(jnp.float32(0.0), jnp.float32(50.0)))
    theirs = module.make_optimizer(schedule, 0.5)
    key = jax.random.PRNGKey(11)
    params = {"w": jax.random.normal(key, (5, 3)), "b": jnp.zeros(3)}
    s_ours, s_theirs = ours.init(params), theirs.init(params)
    for step in range(12):
        grads = jax.tree.map(lambda x, s=step: (1.0 + s) * jax.random.normal(jax.random.fold_in(key, s), x.shape),
                             params)
        u_ours, s_ours = ours.update(grads, s_ours, params)
        u_theirs, s_theirs = theirs.update(grads, s_theirs, params)
        for a, b in zip(jax.tree.leaves(u_ours), jax.tree.leaves(u_theirs), strict=True):
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


@pytest.mark.heavy
@pytest.mark.slow  # 36 s on 2 cores
@pytest.mark.parametrize("residual", [False, True])
def test_exported_open_steps_equal_the_piece(tmp_path, residual):
    """OPEN's export, given the context metadisco's trainer gives it (an ActorCritic's layout and activations),
    makes the piece's steps to the bit, from a random meta-parameter point, over several updates."""
    from metadisco.objectives.registry import OptimizerContext
    from metadisco.trainers.networks import optimizer_layout, unit_activations

    piece = OPTIMIZERS.make("open", residual=residual)
    objective = objective_with(optimizer=piece)
    meta = random_meta(piece, jax.random.PRNGKey(5), scale=0.3)
    module, files = exported(tmp_path, objective, {**objective.zero_meta(), "optimizer": meta})
    assert "def open_transformation" in files["objective.py"]
    ours = piece(meta, OptimizerInputs(3e-3, 0.5, 20), Progress(jnp.float32(0.0), jnp.float32(20.0)))
    theirs = module.make_optimizer(3e-3, 0.5)
    env = make_env("CartPole-v1")
    network = make_network(env.spec, (16, 16), "tanh")
    key = jax.random.PRNGKey(7)
    params = jax.jit(network.init)(key, jnp.zeros((1, 4)))
    mask, layers = optimizer_layout(params)
    s_ours, s_theirs = ours.init(params), theirs.init(params)

    @jax.jit
    def inputs(params, step):
        """The step's activations and gradients, the same for both (compiled once: only the updates compared
        need to run as written)."""
        k_obs, k_grad, k_noise = jax.random.split(jax.random.fold_in(key, step), 3)
        obs = jax.random.normal(k_obs, (32, 4))
        _, captured = network.apply(params, obs, capture_intermediates=True, mutable=["intermediates"])
        activations = unit_activations(network, params, captured["intermediates"])
        grads = jax.tree.map(lambda x: (1.0 + step) * jax.random.normal(k_grad, x.shape), params)
        return activations, grads, k_noise

    for step in range(6):
        activations, grads, k_noise = inputs(params, step)
        fields = (activations, mask, layers, jnp.float32(step / 19), jnp.float32(step % 4 / 3), k_noise)
        u_ours, s_ours = ours.update(grads, s_ours, params, context=OptimizerContext(*fields))
        u_theirs, s_theirs = theirs.update(grads, s_theirs, params, context=module.OptimizerContext(*fields))
        for a, b in zip(jax.tree.leaves(u_ours), jax.tree.leaves(u_theirs), strict=True):
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
        assert any(float(jnp.abs(a).max()) > 0 for a in jax.tree.leaves(u_ours))
        params = optax.apply_updates(params, u_ours)


def test_open_is_refused_by_discobench_saying_what_its_train_py_lacks():
    objective = objective_with(optimizer=OPTIMIZERS.make("open"))
    with pytest.raises(UserError, match=r"^optimizer 'open' cannot enter DiscoBench's optim.py: it reads each "
                                        r"layer's activations.*export --format jax"):
        export_files(objective, objective.zero_meta(), ABOUT, "discobench")


# ---------------------------------------------------------------------------------------------------------
# DiscoBench's loss.py against the PPO trainer's loss


class Transition(NamedTuple):
    """DiscoBench's OnPolicyRL `Transition` (train.py): the fields its loss reads are obs, action, value, log_prob."""

    done: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    log_prob: jax.Array
    obs: jax.Array
    info: dict


def trainer_loss_fn(config, env, objective):
    """The PPO trainer's own `loss_fn` (a closure of `make_ppo_trainer`'s `make_update`, which the trainer's
    `step` calls), not a copy of it."""

    def cells(fn):
        return dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))

    step = make_ppo_trainer(config, env, objective).step
    make_update = cells(step)["make_update"].cell_contents
    found = cells(make_update)
    assert "loss_fn" in found, "make_ppo_trainer's make_update no longer closes over loss_fn: update this test"
    return found["loss_fn"].cell_contents


# Each drift's renderer once, and one continuous-action env (its network and log-probabilities) with the drift that
# reads progress: every case is a new set of compiled programs, and a drift's text does not depend on the env.
DISCOBENCH_CASES = [("ppo", "CartPole-v1"), ("dpo", "CartPole-v1"), ("lpo", "CartPole-v1"), ("talpo", "Pendulum-v1")]


@pytest.mark.slow  # 19 s on 2 cores
@pytest.mark.parametrize("kind,env_id", DISCOBENCH_CASES)
def test_discobench_loss_equals_the_trainer_loss(tmp_path, kind, env_id):
    env = make_env(env_id)
    piece = DRIFTS.make(kind, **({"hidden": 16} if kind in ("lpo", "talpo") else {}))
    objective = BUILTIN_OBJECTIVES.get(kind) or objective_with(drift=piece)
    meta = {**objective.zero_meta(), "drift": random_meta(objective.drift, jax.random.PRNGKey(3), scale=1.0)}
    module, files = exported(tmp_path, objective, meta, fmt="discobench")
    assert "optim.py" not in files  # Adam, eps 1e-5: DiscoBench's own
    loss_fn = trainer_loss_fn(TINY, env, objective)
    hyper = hyper_of(TINY)
    network = make_network(env.spec, TINY.hidden_sizes, TINY.activation)
    config = {"VF_COEF": float(hyper.vf_coef), "ENT_COEF": float(hyper.ent_coef), "NUM_UPDATES": 37}
    n = 64
    for i in range(4):
        key = jax.random.PRNGKey(20 + i)
        k_params, k_obs, k_act, k_rest = jax.random.split(key, 4)
        obs = jax.random.normal(k_obs, (n, *env.spec.obs_shape))
        params = network.init(k_params, obs[:1])
        policy, value = network.apply(params, obs)
        if env.spec.discrete:
            action = jax.random.randint(k_act, (n,), 0, env.spec.action_size)
        else:
            action = jax.random.normal(k_act, (n, env.spec.action_size))
        k1, k2, k3 = jax.random.split(k_rest, 3)
        old_log_prob = policy.log_prob(action) + 0.5 * jax.random.normal(k1, (n,))  # ratios around e^(+-1)
        old_value = value + jax.random.normal(k2, (n,))
        advantage = 2.0 * jax.random.normal(k3, (n,)) + 0.3
        target = old_value + advantage
        update = 5 * i
        progress = Progress(jnp.float32(update) / 37, jnp.float32(37))
        ours = Batch(obs, action, old_log_prob, old_value, advantage, target)
        theirs = Transition(jnp.zeros(n), action, old_value, jnp.zeros(n), old_log_prob, obs, {})
        step_config = {**config, "UPDATE_FRACTION": jnp.int32(update) / 37} if kind == "talpo" else config

        def trainer_loss(p, ours=ours, progress=progress):
            return loss_fn(p, ours, meta, hyper, progress)

        def discobench_loss(p, theirs=theirs, advantage=advantage, target=target, step_config=step_config):
            return module.loss_actor_and_critic(p, theirs, advantage, target, network, step_config)

        want_total, want_aux = trainer_loss(params)
        total, (value_loss, actor_loss, entropy) = discobench_loss(params)
        np.testing.assert_array_equal(np.asarray(total), np.asarray(want_total))
        want_actor, want_value, want_entropy = want_aux[:3]
        for got, want in ((actor_loss, want_actor), (value_loss, want_value), (entropy, want_entropy)):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        grads = jax.grad(lambda p: discobench_loss(p)[0])(params)
        want_grads = jax.grad(lambda p: trainer_loss(p)[0])(params)
        # The values agree bit for bit; the gradients to float32 rounding (up to 1 ulp: the backward passes of
        # -(x).mean() and -mean(x) need not order the same sums alike).
        for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


def test_a_progress_reading_discobench_loss_names_what_train_py_must_give(tmp_path):
    objective = objective_with(drift=DRIFTS.make("talpo", hidden=4))
    module, files = exported(tmp_path, objective, objective.zero_meta(), fmt="discobench")
    assert "UPDATE_FRACTION" in files["README.md"] and "change_train: true" in files["README.md"]
    env = make_env("CartPole-v1")
    network = make_network(env.spec, (8,), "tanh")
    obs = jnp.zeros((4, *env.spec.obs_shape))
    params = network.init(jax.random.PRNGKey(0), obs)
    batch = Transition(jnp.zeros(4), jnp.zeros(4, jnp.int32), jnp.zeros(4), jnp.zeros(4), jnp.zeros(4), obs, {})
    with pytest.raises(KeyError, match="UPDATE_FRACTION"):
        module.loss_actor_and_critic(params, batch, jnp.arange(4.0), jnp.zeros(4), network,
                                     {"VF_COEF": 0.5, "ENT_COEF": 0.01, "NUM_UPDATES": 10})


def test_discobench_optim_is_written_for_another_optimizer(tmp_path):
    objective = objective_with(optimizer=OPTIMIZERS.make("radam"))
    files = export_files(objective, objective.zero_meta(), ABOUT, "discobench")
    assert "optim.py" in files
    assert_no_metadisco_import(files["optim.py"])
    optim = load(tmp_path, files["optim.py"], "optim")
    params = {"w": jnp.ones(3)}
    grads = {"w": jnp.asarray([1.0, -2.0, 3.0])}
    tx = optim.scale_by_optimizer()
    want = optax.scale_by_radam(eps=1e-8)
    got, _ = tx.update(grads, tx.init(params), params)
    expected, _ = want.update(grads, want.init(params), params)
    np.testing.assert_array_equal(np.asarray(got["w"]), np.asarray(expected["w"]))


# ---------------------------------------------------------------------------------------------------------
# refusals


class _PluginDrift(Piece):
    name = "plugin_drift"

    def __call__(self, meta, inputs, progress):
        return jnp.zeros_like(inputs.ratio)


def test_pieces_without_a_renderer_are_refused_in_one_line_naming_those_with_one():
    with pytest.raises(UserError, match=r"optimizer 'learned' cannot be exported.*adam, open, radam"):
        o = objective_with(optimizer=OPTIMIZERS.make("learned"))
        export_files(o, o.zero_meta(), ABOUT, "jax")
    with pytest.raises(UserError, match=r"drift 'plugin_drift'.*dpo, expression, learned_dpo, lpo, ppo, talpo"):
        export_files(objective_with(drift=_PluginDrift()), Objective().zero_meta(), ABOUT, "discobench")
    for name in ("pqn", "dqn", "actor_critic"):
        with pytest.raises(UserError, match=f"trained by algorithm {BUILTIN_OBJECTIVES[name].algorithm}, which has "
                                            "no export.*for ppo"):
            check_exportable(BUILTIN_OBJECTIVES[name], name)
    check_exportable(BUILTIN_OBJECTIVES["dpo"], "dpo")
