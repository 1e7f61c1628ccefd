"""Disco103's meta-network (DeepMind's `networks/meta_nets.py` `LSTM` and `MetaLSTM`, `update_rules/disco.py`
`get_input_option`, `update_rules/input_transforms.py`), as pure functions of Haiku's parameter tree (`weights`).

Per update, from a batch of B trajectories of T steps (time first; agent outputs have T+1 steps):

    x_t    = 27 features of step t: pi(a_t), mu(a_t), target pi(a_t), signed log r_t, 1 - terminal_t, v_t and v_t+1,
             adv_t, normalised adv_t, y_net(softmax y) at t and t+1 (online and target), z_net(softmax z) of a_t, its
             pi-weighted mean and max over actions at t and t+1 (online and target), and a per-action embedding
             (a two-layer "conv1d" over the actions of pi, mu, target pi, z, target z, Q, Q - V, normalised Q - V and
             the one-hot of a_t) averaged over actions and taken at a_t
    h_t    = LSTM(256) unrolled BACKWARD over t, reset where the step was terminal
    h_t    = h_t * Linear(m)                 m: the meta-LSTM's hidden state [128], carried across updates
    y^_t   = Linear(600)(h_t); z^_t = Linear(600)(h_t); pi^_t = conv1d over actions of [h_t, embedding_t,a] -> [A]
    m     <- LSTM(128)(mean over b, t of MLP(16)([x'_t, Linear(1)(h_t), y_net'(softmax y^_t)]), m)

x' is x recomputed with the meta-LSTM's own y_net, z_net and conv1d. Haiku's LSTM is one linear layer over
[x, h] with gates in the order i, g, f, o and the forget gate sigma(f + 1).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from metadisco.rl.categorical_value import signed_logp1
from metadisco.rl.nn import lstm_cell

Params = dict  # Haiku's tree, {module name: {"w": array, "b": array}} (`weights.SHAPES`)

_TRAJ = "lstm"
_META = "lstm/~/meta_lstm/~unroll"


class LSTMState(NamedTuple):
    hidden: jax.Array
    cell: jax.Array


class MetaNetInputs(NamedTuple):
    """What the meta-network reads (DeepMind's `UpdateRuleInputs` with its `extra_from_rule`), time first.

    actions [T+1, B] int; rewards, is_terminal [T, B]; the agent's outputs now (`agent_out`), when it acted
    (`behaviour_logits`) and under its target parameters (`target_out`): logits [T+1, B, A], y [T+1, B, Y],
    z [T+1, B, A, Y]; and the value estimates of `rule.value_estimates`: v_scalar [T+1, B], adv and normalized_adv
    [T, B], q, qv_adv and normalized_qv_adv [T+1, B, A]."""

    actions: jax.Array
    rewards: jax.Array
    is_terminal: jax.Array
    agent_out: dict
    behaviour_logits: jax.Array
    target_out: dict
    v_scalar: jax.Array
    adv: jax.Array
    normalized_adv: jax.Array
    q: jax.Array
    qv_adv: jax.Array
    normalized_qv_adv: jax.Array


# DeepMind's input option for Disco103 (`disco.get_input_option`): (source, transforms), concatenated in this order.
BASE_INPUTS = (
    ("agent_out/logits", ("drop_last", "softmax", "stop_grad", "select_a")),
    ("behaviour_agent_out/logits", ("drop_last", "softmax", "stop_grad", "select_a")),
    ("rewards", ("sign_log",)),
    ("is_terminal", ("masks_to_discounts",)),
    ("extra_from_rule/v_scalar", ("sign_log", "td_pair", "stop_grad")),
    ("extra_from_rule/adv", ("sign_log", "stop_grad")),
    ("extra_from_rule/normalized_adv", ("stop_grad",)),
    ("extra_from_rule/target_out/logits", ("drop_last", "softmax", "stop_grad", "select_a")),
    ("agent_out/y", ("softmax", "y_net", "td_pair")),
    ("extra_from_rule/target_out/y", ("softmax", "y_net", "td_pair")),
    ("agent_out/z", ("drop_last", "softmax", "z_net", "select_a")),
    ("agent_out/z", ("softmax", "z_net", "pi_weighted_avg", "td_pair")),
    ("agent_out/z", ("softmax", "z_net", "max_a", "td_pair")),
    ("extra_from_rule/target_out/z", ("drop_last", "softmax", "z_net", "select_a")),
    ("extra_from_rule/target_out/z", ("softmax", "z_net", "pi_weighted_avg", "td_pair")),
    ("extra_from_rule/target_out/z", ("softmax", "z_net", "max_a", "td_pair")),
)
ACTION_INPUTS = (
    ("agent_out/logits", ("drop_last", "softmax", "stop_grad")),
    ("behaviour_agent_out/logits", ("drop_last", "softmax", "stop_grad")),
    ("extra_from_rule/target_out/logits", ("drop_last", "softmax", "stop_grad")),
    ("agent_out/z", ("drop_last", "softmax", "z_net")),
    ("extra_from_rule/target_out/z", ("drop_last", "softmax", "z_net")),
    ("extra_from_rule/q", ("sign_log", "drop_last", "stop_grad")),
    ("extra_from_rule/qv_adv", ("sign_log", "drop_last", "stop_grad")),
    ("extra_from_rule/normalized_qv_adv", ("drop_last", "stop_grad")),
)


def _linear(p: dict, x: jax.Array) -> jax.Array:
    return x @ p["w"] + p["b"]


def _mlp(params: Params, prefix: str, layers: int, x: jax.Array) -> jax.Array:
    """Haiku's MLP: relu between layers, none after the last."""
    for i in range(layers):
        x = _linear(params[f"{prefix}/~/linear_{i}"], x)
        if i < layers - 1:
            x = jax.nn.relu(x)
    return x


def _conv1d_block(p: dict, x: jax.Array) -> jax.Array:
    """A width-1 convolution over the action axis (-2) of [x, mean over actions of x], then relu."""
    x = jnp.concatenate([x, jnp.broadcast_to(x.mean(axis=-2, keepdims=True), x.shape)], axis=-1)
    return jax.nn.relu(x @ p["w"][0] + p["b"])


def _conv1d_net(params: Params, prefix: str, blocks: int, x: jax.Array) -> jax.Array:
    for i in range(blocks):
        x = _conv1d_block(params[f"{prefix}/conv1_d" + (f"_{i}" if i else "")], x)
    return x


def lstm_step(p: dict, x: jax.Array, state: LSTMState) -> LSTMState:
    """Haiku's LSTM: one linear layer over [x, h], gates i, g, f, o, forget gate sigma(f + 1)."""
    return LSTMState(*lstm_cell(_linear(p, jnp.concatenate([x, state.hidden], axis=-1)), state.cell))


def initial_meta_rnn_state() -> LSTMState:
    return LSTMState(jnp.zeros((128,), jnp.float32), jnp.zeros((128,), jnp.float32))


def select(x: jax.Array, actions: jax.Array) -> jax.Array:
    """x[t, b, actions[t, b]] for x [T, B, A, ...], actions [T, B] -> [T, B, ...]."""
    index = actions.astype(jnp.int32).reshape(actions.shape + (1,) * (x.ndim - 2))
    return jnp.take_along_axis(x, index, axis=2)[:, :, 0]


def _source(inputs: MetaNetInputs, name: str) -> jax.Array:
    head, _, rest = name.partition("/")
    if head == "agent_out":
        return inputs.agent_out[rest]
    if head == "behaviour_agent_out":
        return inputs.behaviour_logits
    if head in ("rewards", "is_terminal"):
        return getattr(inputs, head).astype(inputs.rewards.dtype)
    if rest.startswith("target_out/"):
        return inputs.target_out[rest.removeprefix("target_out/")]
    return getattr(inputs, rest)[..., None]  # a rule's own estimate gains a feature axis


# Transforms of each step's own numbers (the trailing axes): they commute with dropping the last step.
_PER_STEP = frozenset({"softmax", "stop_grad", "y_net", "z_net", "sign_log", "masks_to_discounts"})


def _drop_last_later(chain: tuple[str, ...]) -> tuple[str, ...]:
    """`chain` with "drop_last" moved past the per-step transforms after it: the same numbers, and chains that
    differ only there (z_net of softmax z with and without the last step) share one computation."""
    out, pending = [], False
    for t in chain:
        if t == "drop_last":
            pending = True
        elif t in _PER_STEP:
            out.append(t)
        else:
            out += ["drop_last"] * pending + [t]
            pending = False
    return tuple(out + ["drop_last"] * pending)


def _features(params: Params, prefix: str, inputs: MetaNetInputs) -> tuple[jax.Array, jax.Array]:
    """DeepMind's `_construct_input`: the [T, B, 27] features and the [T, B, A, 2] per-action embedding, with the
    y_net, z_net and conv1d under `prefix`."""
    steps, batch = inputs.rewards.shape
    actions = inputs.actions[:-1]
    policy = jax.lax.stop_gradient(jax.nn.softmax(inputs.agent_out["logits"]))  # [T+1, B, A]
    num_actions = policy.shape[-1]
    transforms = {
        "y_net": lambda x: _mlp(params, f"{prefix}/mlp", 2, x),
        "z_net": lambda x: _mlp(params, f"{prefix}/mlp_1", 2, x),
        "select_a": lambda x: select(x, actions),
        "pi_weighted_avg": lambda x: jnp.sum(x * policy[..., None], axis=2),
        "max_a": lambda x: jnp.max(x, axis=2),
        "softmax": jax.nn.softmax,
        "stop_grad": jax.lax.stop_gradient,
        "drop_last": lambda x: x[:-1],
        "td_pair": lambda x: jnp.concatenate([x[:-1], x[1:]], axis=-1),
        "sign_log": signed_logp1,
        "masks_to_discounts": lambda x: 1.0 - x,
    }

    computed = {}  # (source, chain so far) -> array: each z_net or y_net pass runs once per source

    def apply(name, chain):
        if (name, chain) not in computed:
            computed[name, chain] = (transforms[chain[-1]](apply(name, chain[:-1])) if chain
                                     else _source(inputs, name))
        return computed[name, chain]

    def build(option, prefix_shape):
        return [apply(name, _drop_last_later(chain)).reshape(*prefix_shape, -1) for name, chain in option]

    base = build(BASE_INPUTS, (steps, batch))
    per_action = build(ACTION_INPUTS, (steps, batch, num_actions))
    per_action.append(jax.nn.one_hot(actions, num_actions, dtype=jnp.float32)[..., None])
    embedding = _conv1d_net(params, f"{prefix}/sequential", 2, jnp.concatenate(per_action, axis=-1))  # [T, B, A, 2]
    base += [embedding.mean(axis=2), select(embedding, actions)]
    return jnp.concatenate(base, axis=-1), embedding


def meta_net(params: Params, meta_rnn_state: LSTMState, inputs: MetaNetInputs) -> tuple[dict, LSTMState]:
    """The meta-network's targets and its meta-LSTM's next state.

    Returns ({"pi": [T, B, A], "y": [T, B, Y], "z": [T, B, Y], "meta_input_emb": [T, B, 1]}, new meta-LSTM state).
    """
    steps, batch = inputs.rewards.shape
    x, embedding = _features(params, _TRAJ, inputs)

    core = params[f"{_TRAJ}/lstm/linear"]
    hidden = core["w"].shape[1] // 4

    def backward(state, xs):
        x_t, reset_t = xs
        state = jax.tree.map(lambda s: jnp.where(reset_t[:, None], 0.0, s), state)
        state = lstm_step(core, x_t, state)
        return state, state.hidden

    zeros = jnp.zeros((batch, hidden), x.dtype)
    _, h = jax.lax.scan(backward, LSTMState(zeros, zeros), (x, inputs.is_terminal.astype(bool)), reverse=True)

    h = h * _linear(params[f"{_TRAJ}/linear"], meta_rnn_state.hidden)
    meta_input_emb = _linear(params[f"{_TRAJ}/linear_1"], h)
    y_hat = _linear(params[f"{_TRAJ}/linear_2"], h)
    z_hat = _linear(params[f"{_TRAJ}/linear_3"], h)
    num_actions = embedding.shape[2]
    w = jnp.concatenate([jnp.broadcast_to(h[:, :, None], (steps, batch, num_actions, h.shape[-1])), embedding], -1)
    w = _conv1d_net(params, f"{_TRAJ}/sequential_1", 1, w)
    pi_hat = _linear(params[f"{_TRAJ}/linear_4"], w)[..., 0]
    out = {"pi": pi_hat, "y": y_hat, "z": z_hat, "meta_input_emb": meta_input_emb}

    # The meta-LSTM: one step per update, on the batch-and-time mean of an embedding of what it saw and produced.
    meta_x, _ = _features(params, _META, inputs)
    meta_x = jnp.concatenate([meta_x, meta_input_emb, _mlp(params, f"{_META}/mlp", 2, jax.nn.softmax(y_hat))], -1)
    meta_x = _mlp(params, f"{_META}/mlp_2", 1, meta_x).mean(axis=(0, 1))
    return out, lstm_step(params[f"{_META}/lstm/linear"], meta_x, meta_rnn_state)
