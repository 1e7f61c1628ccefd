"""DiscoRL's update rule as the objective piece `update_rule: {kind: disco}`: its meta-parameters are Haiku's tree
of the meta-network (`weights.SHAPES`; Disco103's are `weights.load_disco103` of the released file), its agent
DiscoRL's prediction agent (`agent.PredictionAgent`), its state the meta-LSTM and EMA normalisers
(`rule.MetaState`). `metadisco.trainers.update_rule` trains an agent with it.

Zero meta-parameters are not a handcrafted method: the meta-network then gives uniform targets. The rule has no
baseline of its own; judge it against PPO, DPO or another rule (`metadisco evaluate`)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metadisco.objectives.disco import rule
from metadisco.objectives.disco.agent import PredictionAgent
from metadisco.objectives.disco.weights import SHAPES
from metadisco.objectives.registry import UPDATE_RULES, Piece, UpdateRuleInputs


@UPDATE_RULES.register("disco")
@dataclass(frozen=True)
class DiscoRule(Piece):
    """DiscoRL's update rule (Oh et al., Nature 2025) with Disco103's settings (`rule`: discount and lambda come
    from the trainer's gamma and gae_lambda, DeepMind's 0.997 and 0.95 in the update_rule presets)."""

    baseline = "none"
    target_coeff = rule.TARGET_COEFF
    uses_target = True

    def zero_meta(self):
        return {module: {"w": jnp.zeros(w, jnp.float32), "b": jnp.zeros(b, jnp.float32)}
                for module, (w, b) in SHAPES.items()}

    def agent(self, num_actions: int, torso: tuple[int, ...], activation: str) -> PredictionAgent:
        return PredictionAgent(num_actions, torso=tuple(torso), activation=activation)

    def init_state(self) -> rule.MetaState:
        return rule.initial_meta_state()

    def __call__(self, meta, inputs: UpdateRuleInputs, state: rule.MetaState):
        """((meta-network outputs pi, y, z; value estimates), next meta-state) of one learner step's batch."""
        meta_out, estimates, state = rule.unroll_meta_net(meta, state, _rollout(inputs), inputs.agent_out,
                                                          inputs.target_out, inputs.discount, inputs.lam)
        return (meta_out, estimates), state

    def loss(self, inputs: UpdateRuleInputs, agent_out: dict, targets) -> jax.Array:
        meta_out, estimates = targets
        return rule.agent_loss(_rollout(inputs), agent_out, meta_out, estimates)


def _rollout(inputs: UpdateRuleInputs) -> rule.Rollout:
    return rule.Rollout(inputs.actions, inputs.rewards, inputs.is_terminal, inputs.behaviour_logits)
