"""What a learned update rule asks of an agent, beside what actor-critic would use (matplotlib, Agg backend).

    rule_targets.png   left:  how far the rule's policy target moves log pi(a_t) (log softmax(pi^)[a_t] minus the
                              agent's log pi(a_t)) against the normalised advantage, which scales actor-critic's
                              step on log pi(a_t);
                       right: the rule's y target, read through its leading principal component over the batch,
                              against the Retrace estimate of the return, the target actor-critic's critic uses

A drift is a function of two numbers and can be drawn as a surface (`objective_figures`); a learned update rule reads
whole trajectories, so it is drawn on a batch an agent collected: each point is one step of one trajectory.
`plot_update_rule` trains that agent (`metadisco plot RULE.msgpack --env ENV`).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.figures import pyplot, save_figure
from metadisco.objectives.disco import rule
from metadisco.objectives.disco.meta_net import select

plt = pyplot()


def rule_targets(meta, params, target_params, meta_state: rule.MetaState, network, batch) -> dict[str, np.ndarray]:
    """The rule's targets and actor-critic's quantities on `batch` (obs, actions, rewards, terminal, logits, time
    first, [T + 1, B, ...] as `metadisco.trainers.update_rule.sample_trajectories` gives it), each flattened to [T * B]:
    `policy_shift`, `advantage` (EMA-normalised), `y_component` (the y target's leading principal component, its
    sign set to rise with the return) and `return` (Retrace's Q target)."""
    obs, actions, rewards, terminal, logits = batch
    rollout = rule.Rollout(actions, rewards[:-1], terminal[:-1], logits)
    agent_out, target_out = network.apply(params, obs), network.apply(target_params, obs)
    meta_out, estimates, _ = rule.unroll_meta_net(meta, meta_state, rollout, agent_out, target_out)
    taken = actions[:-1]
    shift = select(jax.nn.log_softmax(meta_out["pi"]), taken) - select(jax.nn.log_softmax(agent_out["logits"][:-1]),
                                                                      taken)
    y = np.asarray(jax.nn.softmax(meta_out["y"]), np.float64).reshape(-1, meta_out["y"].shape[-1])
    returns = np.asarray(estimates.q_target, np.float64).ravel()
    return {"policy_shift": np.asarray(shift, np.float64).ravel(),
            "advantage": np.asarray(estimates.normalized_adv, np.float64).ravel(),
            "y_component": _leading_component(y, returns), "return": returns}


def correlation(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.corrcoef(x, y)[0, 1]) if np.std(x) > 0 and np.std(y) > 0 else float("nan")


DISCO_AXES = ("normalised advantage (actor-critic)", "policy target: change of log pi(a_t)",
              "Retrace return estimate (critic's target)", "y target: leading principal component")
LPG_AXES = ("return-to-go minus its batch mean (an advantage without a critic)", "pi^: the policy target",
            "discounted return-to-go within the trajectory", "y^: leading principal component")


def _leading_component(y: np.ndarray, returns: np.ndarray) -> np.ndarray:
    """Each row's coordinate on the rows' leading principal component, its sign set to rise with `returns`."""
    centred = y - y.mean(axis=0)
    component = centred @ np.linalg.svd(centred, full_matrices=False)[2][0]
    return -component if correlation(component, returns) < 0 else component


def return_to_go(rewards: jax.Array, terminal: jax.Array, gamma: float) -> jax.Array:
    """[T, B] discounted returns from each step to the trajectory's end (0 after it), cut at episode ends."""
    def back(g, step):
        r, d = step
        g = r + gamma * (1.0 - d) * g
        return g, g

    _, g = jax.lax.scan(back, jnp.zeros(rewards.shape[1:]), (rewards, terminal.astype(rewards.dtype)),
                        reverse=True)
    return g


def lpg_targets(rule, meta, params, network, batch, gamma: float, progress) -> dict[str, np.ndarray]:
    """An LPG rule's targets on `batch` (as `rule_targets`), beside the discounted return-to-go: `policy_shift` is
    pi^, `advantage` the return-to-go minus its mean over the batch, `y_component` y^'s leading principal
    component, `return` the return-to-go; each [T * B]."""
    from metadisco.objectives import UpdateRuleInputs

    obs, actions, rewards, terminal, logits = batch
    out = network.apply(params, obs)
    inputs = UpdateRuleInputs(actions, rewards[:-1], terminal[:-1], logits, out, out, jnp.float32(gamma),
                              jnp.float32(0.95), progress)
    (pi_hat, y_hat), _ = rule(meta, inputs, rule.init_state())
    returns = np.asarray(return_to_go(rewards[:-1], terminal[:-1], gamma), np.float64).ravel()
    y = np.asarray(y_hat, np.float64).reshape(-1, y_hat.shape[-1])
    return {"policy_shift": np.asarray(pi_hat, np.float64).ravel(), "advantage": returns - returns.mean(),
            "y_component": _leading_component(y, returns), "return": returns}


def rule_targets_figure(targets: dict[str, np.ndarray], label: str, out: str | Path,
                        axes_labels: tuple[str, str, str, str] = DISCO_AXES) -> Path:
    """Draw `rule_targets(...)` (or `lpg_targets`, with `LPG_AXES`) to `out`/rule_targets.png; each panel's title
    gives the correlation."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    panels = (("advantage", "policy_shift", *axes_labels[:2]), ("return", "y_component", *axes_labels[2:]))
    for ax, (x, y, xlabel, ylabel) in zip(axes, panels, strict=True):
        ax.scatter(targets[x], targets[y], s=6, alpha=0.4)
        ax.axhline(0.0, color="grey", lw=0.6)
        ax.axvline(0.0, color="grey", lw=0.6)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(f"correlation {correlation(targets[x], targets[y]):+.2f}")
    fig.suptitle(f"{label}: what the rule asks, beside actor-critic ({len(targets['advantage'])} steps)")
    return save_figure(fig, Path(out) / "rule_targets.png", dpi=110)


def targets_at(meta, state, network, key: jax.Array, batch: int) -> dict[str, np.ndarray]:
    """`rule_targets` on `batch` trajectories drawn from a trainer state's replay
    (`metadisco.trainers.base.TrainState` whose `extra` is `metadisco.trainers.update_rule.RuleExtra`)."""
    from metadisco.trainers.update_rule import sample_trajectories

    extra = state.extra
    sample = sample_trajectories(extra.replay, key, batch)
    return rule_targets(meta, state.params, extra.target_params, extra.rule_state, network,
                        jax.tree.map(jnp.asarray, sample))


def plot_update_rule(objective, meta, label: str, out: str | Path, env_id: str, timesteps: int | None = None,
                     seed: int = 0, batch: int = 64, overrides=None) -> list[Path]:
    """Train one agent with `objective`'s update rule on `env_id` (its update_rule preset with `overrides`,
    `timesteps` env steps; None: the preset's) and draw `rule_targets_figure` on `batch` trajectories of its replay
    at the end (an LPG rule: on the last rollouts, beside the return-to-go, `lpg_targets`)."""
    from metadisco.core.errors import UserError
    from metadisco.envs import make_env
    from metadisco.runs.seeds import resolve_config
    from metadisco.trainers import make_trainer

    rule = objective.update_rule
    if rule is None or rule.name not in ("disco", "lpg"):
        raise UserError("the update-rule figure draws rules of kind disco and lpg")
    config = resolve_config(env_id, None, overrides or (), timesteps, "update_rule")
    env = make_env(env_id)
    trainer = make_trainer(config, env, objective)
    state = jax.jit(trainer.init)(jax.random.PRNGKey(seed), meta)
    state, _ = jax.jit(trainer.step, static_argnums=1)(state, trainer.num_updates)
    network = rule.agent(env.spec.action_size, config.hidden_sizes, config.activation)
    key = jax.random.fold_in(jax.random.PRNGKey(seed), 1)
    title = f"{label} on {env_id}, after {trainer.num_updates} updates"
    if rule.name == "disco":
        return [rule_targets_figure(targets_at(meta["update_rule"], state, network, key, batch), title, out)]
    from metadisco.objectives import Progress
    from metadisco.trainers.update_rule import sample_trajectories

    capacity = config.options.replay_capacity
    sample = jax.tree.map(jnp.asarray, sample_trajectories(state.extra.replay, key, min(batch, capacity)))
    progress = Progress(jnp.float32(1.0), jnp.float32(trainer.num_updates))
    targets = lpg_targets(rule, meta["update_rule"], state.params, network, sample, float(config.gamma), progress)
    return [rule_targets_figure(targets, title, out, LPG_AXES)]
