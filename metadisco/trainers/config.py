"""Trainer configuration: a frozen, hashable dataclass, presets per env family and algorithm, and `--set`
overrides.

The fields split in two (rejax's static / traced split; `metadisco.trainers.hyper`). Those named in `Hyper` (learning
rate, gamma, GAE lambda, entropy and value coefficients, gradient clip) fix no shape: the trainer takes them as
a pytree argument, `train(key, meta, hyper)`, so one compiled program serves every value, and sweeps, PBT and
the ES can vary them. The rest fix shapes or the program's structure (env count, rollout length, epochs,
minibatches, network, annealing on or off, normalisation) and are static under `jax.jit` (the config is
hashable). `metadisco.trainers.hyper.static_of(config)` blanks the traced fields: the key of a compiled program.
`algorithm` picks the trainer (`metadisco.trainers`): PPO / mirror learning (the default), PQN, or a learned update
rule's (`update_rule`); all take the same `Hyper` (PQN reads lr, gamma, gae_lambda, max_grad_norm and ignores the
PPO-only ent_coef, vf_coef; an update rule reads lr, gamma and gae_lambda). A setting only some algorithms read
(`READ_BY`) must keep its default under the others. PPO's
presets follow PureJaxRL's settings (Lu et al. 2022, github.com/luchris429/purejaxrl); PQN's (the `pqn_*` presets)
follow the published configs of PQN's authors (Gallici, Fellows et al., ICLR 2025, github.com/mttga/purejaxql,
purejaxql/config/alg/pqn_*.yaml), each number's source given beside the preset.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, NamedTuple

from metadisco.core.coerce import INT32_MAX, check_float, check_int, coerce, is_number
from metadisco.core.errors import UserError, shorten, unknown_name_error
from metadisco.core.limits import check_trainer_fits
from metadisco.core.schema import Settings, mapping_section, split_assignment


class Hyper(NamedTuple):
    """The traced settings of the inner trainer (`TrainConfig.HYPER`): float32 scalars for one agent, [runs]
    arrays when vmapped over a sweep or a PBT population. PQN reads lr, gamma, gae_lambda and max_grad_norm;
    ent_coef and vf_coef are PPO's own (PQN carries and ignores them)."""

    lr: Any
    gamma: Any
    gae_lambda: Any
    ent_coef: Any
    vf_coef: Any
    max_grad_norm: Any


@dataclass(frozen=True)
class TrainConfig:
    """Settings of the inner trainer: PPO / mirror learning, or PQN (`algorithm`). The fields named in `HYPER`
    are traced; in a static config (`metadisco.trainers.hyper.static_of`) they are None.

    Shared by both: env and rollout sizes, epochs and minibatches, gamma, `gae_lambda` (the lambda of the
    returns: GAE's for PPO, Q(lambda)'s for PQN), learning rate and its annealing, gradient clipping, network
    sizes, normalisation. PPO's own: `ent_coef`, `vf_coef`. PQN's own: the epsilon-greedy schedule and
    `reward_scale`. Setting the other algorithm's own setting is an error, not silently ignored.
    """

    HYPER: ClassVar[type] = Hyper

    algorithm: str = "ppo"
    num_envs: int = 4
    num_steps: int = 128
    total_timesteps: int = 500_000
    update_epochs: int = 4
    num_minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    lr: float = 2.5e-4
    anneal_lr: bool = True
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    normalize_obs: bool = False
    normalize_reward: bool = False
    # Fraction of the final updates whose finished episodes define the "final return".
    final_window: float = 0.05
    # Rollout steps per loop iteration in the compiled scan; 0: by the platform the program is built for
    # (`metadisco.trainers.base.rollout_unroll`: 8 on a GPU, 1 on a CPU). Unrolled steps fuse differently, so the
    # numbers differ in their last bits (and a run's path with them) from the loop of one step.
    rollout_unroll: int = 0
    # Deterministic evaluation episodes each trained agent plays after training (its mode; DiscoBench's and OPEN's
    # score, `metadisco.trainers.greedy`), reported as `Metrics.eval_return` and the `eval_return` fitness. 0: none.
    eval_episodes: int = 0
    # PQN: epsilon decays linearly from eps_start to eps_finish over the first eps_decay of the updates; rewards
    # are multiplied by reward_scale in the TD targets (not in the logged returns).
    eps_start: float = 1.0
    eps_finish: float = 0.05
    eps_decay: float = 0.1
    reward_scale: float = 1.0
    # update_rule: a FIFO replay of replay_capacity whole trajectories (num_steps each), replay_batch of them drawn
    # for each learner step once that many are held; Adam's step is clipped element-wise at max_abs_update.
    replay_capacity: int = 1024
    replay_batch: int = 64
    max_abs_update: float = 1.0

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.batch_size

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    def validate(self) -> TrainConfig:
        """Raise a `UserError` naming the first setting that cannot work; return self otherwise.

        Types, finiteness and ranges are checked for every field (a NaN fails `x <= 0`, so it is tested for
        explicitly); sizes are bounded by int32 (they are loop lengths and array sizes under jit) and, together,
        by this machine's memory (`metadisco.core.limits`). A static config (every traced field None) has its static
        fields checked; its numbers are checked where they are made (`metadisco.trainers.hyper.with_values`)."""
        for name in ("num_envs", "num_steps", "update_epochs", "num_minibatches"):
            if not is_number(getattr(self, name)) or getattr(self, name) <= 0:
                raise UserError(f"{name} must be a positive integer, got {shorten(getattr(self, name))}")
            check_int(name, getattr(self, name), 1, INT32_MAX, "an int32 size under jit")
        if not is_number(self.rollout_unroll) or self.rollout_unroll < 0:
            raise UserError(f"rollout_unroll must be a non-negative integer (0: by platform), got "
                            f"{shorten(self.rollout_unroll)}")
        check_int("rollout_unroll", self.rollout_unroll, 0, INT32_MAX, "an int32 size under jit")
        if not is_number(self.total_timesteps) or self.total_timesteps <= 0:
            raise UserError(f"timesteps must be positive, got {shorten(self.total_timesteps)}")
        check_int("timesteps", self.total_timesteps, 1)
        if self.num_updates < 1:
            raise UserError(
                f"timesteps {self.total_timesteps} is smaller than one update "
                f"(num_envs x num_steps = {self.batch_size}); use at least {self.batch_size}"
            )
        if self.num_updates > INT32_MAX:
            raise UserError(f"timesteps {shorten(self.total_timesteps)} gives {self.num_updates:,} updates of "
                            f"{self.batch_size} steps; at most {INT32_MAX:,} (the update loop counts in int32)")
        if self.batch_size % self.num_minibatches and self.algorithm != "update_rule":
            raise UserError(
                f"num_envs x num_steps = {self.batch_size} must divide by num_minibatches "
                f"= {self.num_minibatches}"
            )
        if not all(getattr(self, name) is None for name in Hyper._fields):
            self._validate_hyper()
        check_float("final_window", self.final_window, 0.0, 1.0, lo_open=True)
        if not is_number(self.eval_episodes) or self.eval_episodes < 0:
            raise UserError(f"eval_episodes must be a whole number >= 0, got {shorten(self.eval_episodes)}")
        check_int("eval_episodes", self.eval_episodes, 0, MAX_EVAL_EPISODES, "episodes played at once")
        for name in ("anneal_lr", "normalize_obs", "normalize_reward"):
            if not isinstance(getattr(self, name), bool):
                raise UserError(f"{name} must be true or false, got {shorten(getattr(self, name))}")
        if self.activation not in ACTIVATIONS:
            raise unknown_name_error("activation", str(self.activation), ACTIVATIONS)
        if not isinstance(self.hidden_sizes, tuple) or not self.hidden_sizes or any(
                not is_number(h) or h <= 0 for h in self.hidden_sizes):
            raise UserError(f"hidden_sizes must be positive integers, got {shorten(self.hidden_sizes)}")
        for h in self.hidden_sizes:
            check_int("hidden_sizes", h, 1, INT32_MAX, "an int32 size under jit")
        if self.algorithm not in ALGORITHMS:
            raise unknown_name_error("algorithm", str(self.algorithm), ALGORITHMS)
        for name in ("eps_start", "eps_finish"):
            check_float(name, getattr(self, name), 0.0, 1.0)
        check_float("eps_decay", self.eps_decay, 0.0, 1.0, lo_open=True)
        check_float("reward_scale", self.reward_scale, 0.0, lo_open=True)
        for name in ("replay_capacity", "replay_batch"):
            if not is_number(getattr(self, name)) or getattr(self, name) <= 0:
                raise UserError(f"{name} must be a positive integer, got {shorten(getattr(self, name))}")
            check_int(name, getattr(self, name), 1, INT32_MAX, "an int32 size under jit")
        check_float("max_abs_update", self.max_abs_update, 0.0, lo_open=True)
        for name, readers in READ_BY.items():
            if self.algorithm not in readers and getattr(self, name) is not None \
                    and getattr(self, name) != getattr(DEFAULT, name):
                raise UserError(f"{name} is a setting of algorithm {' and '.join(sorted(readers))}, not of "
                                f"{self.algorithm}; leave it out, or use algorithm={sorted(readers)[0]}")
        if self.algorithm == "update_rule" and max(self.replay_batch, self.num_envs) > self.replay_capacity:
            raise UserError(f"replay_capacity {self.replay_capacity} must hold replay_batch {self.replay_batch} "
                            f"and num_envs {self.num_envs} trajectories")
        if self.algorithm == "update_rule" and self.num_steps < 2:
            raise UserError("num_steps must be at least 2 for algorithm update_rule: a trajectory needs a step and "
                            "the one after it")
        check_trainer_fits(self, 1, "one training run")
        return self

    def _validate_hyper(self) -> None:
        check_float("gamma", self.gamma, 0.0, 1.0, lo_open=True)
        check_float("gae_lambda", self.gae_lambda, 0.0, 1.0)
        for name in ("ent_coef", "vf_coef"):
            check_float(name, getattr(self, name), 0.0)
        for name in ("lr", "max_grad_norm"):
            if is_number(getattr(self, name)) and getattr(self, name) <= 0:
                raise UserError(f"{name} must be positive, got {getattr(self, name)}")
            check_float(name, getattr(self, name), 0.0, lo_open=True)


ACTIVATIONS = ("tanh", "relu")
MAX_EVAL_EPISODES = 4096
ALGORITHMS = ("ppo", "pqn", "update_rule")
# Settings that only some algorithms read: under the others they must keep their defaults.
READ_BY = {
    **dict.fromkeys(("ent_coef", "vf_coef"), ("ppo",)),
    **dict.fromkeys(("eps_start", "eps_finish", "eps_decay", "reward_scale"), ("pqn",)),
    **dict.fromkeys(("update_epochs", "num_minibatches", "max_grad_norm"), ("ppo", "pqn")),
    **dict.fromkeys(("replay_capacity", "replay_batch", "max_abs_update"), ("update_rule",)),
}
DEFAULT = TrainConfig()

# Settings that left TrainConfig, and where they went: naming one is a one-line error that says so.
MOVED = {
    "value_clip_eps": "value_clip_eps moved from the trainer settings to the clipped-L2 value loss: give the "
                      "objective `value_loss: {kind: clipped_l2, clip_eps: X}` (a meta-training config's objective "
                      "section, or an objective file) instead",
}


def check_not_moved(key: str) -> None:
    if key in MOVED:
        raise UserError(MOVED[key])

PRESETS: dict[str, TrainConfig] = {
    # CartPole, Acrobot, Pendulum, bsuite, misc: PureJaxRL's CartPole settings.
    "classic": TrainConfig(),
    "minatar": TrainConfig(
        num_envs=64, num_steps=128, total_timesteps=10_000_000, num_minibatches=8, lr=5e-3,
        activation="relu",
    ),
    "brax": TrainConfig(
        num_envs=2048, num_steps=10, total_timesteps=50_000_000, num_minibatches=32, lr=3e-4,
        anneal_lr=False, ent_coef=0.0, hidden_sizes=(256, 256), normalize_obs=True, normalize_reward=True,
    ),
    # Craftax's PPO baseline (Matthews et al., ICML 2024; MichaelTMatthews/Craftax_Baselines ppo.py defaults and
    # models/actor_critic.py ActorCritic): 1024 envs x 64 steps, 1e9 steps, 4 epochs x 8 minibatches, lr 2e-4
    # annealed, gamma 0.99, GAE lambda 0.8, entropy 0.01, max grad norm 1, 3 x 512 tanh towers. Not theirs:
    # optimistic resets.
    "craftax": TrainConfig(
        num_envs=1024, num_steps=64, total_timesteps=1_000_000_000, update_epochs=4, num_minibatches=8, lr=2e-4,
        gae_lambda=0.8, max_grad_norm=1.0, hidden_sizes=(512, 512, 512),
    ),
    # PQN, mttga/purejaxql purejaxql/config/alg/pqn_cartpole.yaml (commit 970ecce): 32 envs x 64 steps, 5e5
    # steps, 4 epochs x 16 minibatches, lr 1e-4 linearly decayed, eps 1.0 -> 0.2 over 20% of the updates, 2 x 256
    # LayerNorm ReLU MLP, max grad norm 10, reward scale 0.1, gamma 0.99, lambda 0.95; RAdam (pqn_gymnax.py, the
    # built-in objective `pqn`'s optimiser).
    "pqn_classic": TrainConfig(
        algorithm="pqn", num_envs=32, num_steps=64, total_timesteps=500_000, update_epochs=4, num_minibatches=16,
        gamma=0.99, gae_lambda=0.95, lr=1e-4, anneal_lr=True, max_grad_norm=10.0, hidden_sizes=(256, 256),
        activation="relu", eps_start=1.0, eps_finish=0.2, eps_decay=0.2, reward_scale=0.1,
    ),
    # PQN, purejaxql/config/alg/pqn_minatar.yaml (commit 0cd95ed): 128 envs x 32 steps, 1e7 steps, 2 epochs x 32
    # minibatches, lr 5e-4 decayed, eps 1.0 -> 0.05 over 10%, max grad norm 10, gamma 0.99, lambda 0.65, reward
    # scale 1. The network is not theirs: pqn_minatar.py has a CNN (Conv 16 3x3 -> LayerNorm -> Dense 128 ->
    # LayerNorm); metadisco's envs flatten MinAtar's grid, so this is a 2 x 128 LayerNorm ReLU MLP.
    "pqn_minatar": TrainConfig(
        algorithm="pqn", num_envs=128, num_steps=32, total_timesteps=10_000_000, update_epochs=2,
        num_minibatches=32, gamma=0.99, gae_lambda=0.65, lr=5e-4, anneal_lr=True, max_grad_norm=10.0,
        hidden_sizes=(128, 128), activation="relu", eps_start=1.0, eps_finish=0.05, eps_decay=0.1,
    ),
    # PQN, purejaxql/config/alg/pqn_craftax.yaml (commit c5aa074): 1024 envs x 1 step, 1e9 steps, 1 epoch x 1
    # minibatch, lr 1e-4 decayed, eps 0.1 -> 0.005 over 20%, 4 x 1024 LayerNorm MLP, max grad norm 1, gamma
    # 0.99, lambda 0 (one-step targets). NORM_INPUT (a BatchNorm on the input) becomes running observation
    # normalisation here; their optimistic resets are not reproduced.
    "pqn_craftax": TrainConfig(
        algorithm="pqn", num_envs=1024, num_steps=1, total_timesteps=1_000_000_000, update_epochs=1,
        num_minibatches=1, gamma=0.99, gae_lambda=0.0, lr=1e-4, anneal_lr=True, max_grad_norm=1.0,
        hidden_sizes=(1024,) * 4, activation="relu", normalize_obs=True, eps_start=0.1, eps_finish=0.005,
        eps_decay=0.2,
    ),
    # A learned update rule, DiscoRL's eval notebook (google-deepmind/disco_rl colabs/eval.ipynb, commit 9059a29) on
    # Catch: 2 envs x 29 steps per update, one learner step on 64 trajectories from a FIFO replay of 1024 (each
    # trajectory replayed 32 times on average), 1000 updates, lr 1e-2 constant, Adam clipped element-wise at 1;
    # Disco103's discount 0.997 and lambda 0.95 (agent.get_settings_disco); its 512-512 ReLU MLP agent.
    "update_rule_classic": TrainConfig(
        algorithm="update_rule", num_envs=2, num_steps=29, total_timesteps=58_000, lr=1e-2, anneal_lr=False,
        gamma=0.997, gae_lambda=0.95, hidden_sizes=(512, 512), activation="relu",
    ),
    # Not DeepMind's (its released code runs Catch only): MinAtar with the same learner (64 trajectories of 29
    # steps a step, replay of 1024, Disco103's agent), 16 envs per update (each trajectory replayed 4 times on
    # average), 1e7 steps as PPO's MinAtar preset, lr 3e-4 (agent.py's default) constant.
    "update_rule_minatar": TrainConfig(
        algorithm="update_rule", num_envs=16, num_steps=29, total_timesteps=10_000_000, lr=3e-4, anneal_lr=False,
        gamma=0.997, gae_lambda=0.95, hidden_sizes=(512, 512), activation="relu",
    ),
}


def default_preset_name(env_id: str, algorithm: str = "ppo") -> str:
    """The preset an env id gets when none is named: its family's, for `algorithm` ("pqn" prefixes it)."""
    if env_id.startswith("brax/"):
        family = "brax"
    elif env_id.endswith("-MinAtar"):
        family = "minatar"
    elif env_id.startswith("craftax/"):
        family = "craftax"
    else:
        family = "classic"
    if algorithm == "ppo":
        return family
    if f"{algorithm}_{family}" not in PRESETS:
        raise UserError(f"algorithm {algorithm} has no preset for {env_id} ({family} envs); presets: "
                        f"{', '.join(n for n in PRESETS if n.startswith(algorithm + '_'))}")
    return f"{algorithm}_{family}"


def get_preset(name: str) -> TrainConfig:
    if name not in PRESETS:
        raise unknown_name_error("preset", name, list(PRESETS))
    return PRESETS[name]


# ---------------------------------------------------------------------------------------------------------
# overrides ('key=value' from the command line, or a task's `train` section), typed by the field they name


def train_setting(key: str, value: typing.Any, label: str | None = None) -> typing.Any:
    """`value` (plain data: YAML, or a --set value read as YAML) as the type of TrainConfig field `key`, by the
    one coercion engine (`metadisco.core.coerce.coerce`); an unknown or moved key is a `UserError`."""
    check_not_moved(key)
    hints = typing.get_type_hints(TrainConfig)
    if key not in hints:
        raise unknown_name_error("setting", key, [f.name for f in fields(TrainConfig)])
    return coerce(value, hints[key], label or key)


def parse_overrides(assignments) -> dict[str, typing.Any]:
    """'key=value' strings -> {field: typed value}; the value is read as YAML, as every --set value is."""
    from metadisco.core.safe_yaml import load_value

    changes = {}
    for item in assignments:
        key, text = split_assignment(item)
        changes[key] = train_setting(key, load_value(text, f"--set {key}") if text else text)
    return changes


def apply_overrides(config: TrainConfig, overrides) -> TrainConfig:
    """Return `config` with `overrides` applied: 'key=value' strings, or a mapping of typed values (a task's
    `train` section); unknown keys and malformed values are `UserError`s."""
    changes = dict(overrides) if isinstance(overrides, Mapping) else parse_overrides(overrides)
    return replace(config, **changes)


def config_to_dict(config: TrainConfig) -> dict:
    """The config as plain data. `eval_episodes` appears only when set, and the replay settings only for algorithm
    update_rule: the records of every other config (baseline-cache keys, eval.json settings) stay as they were
    before those fields existed."""
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()}
    if not out["eval_episodes"]:
        del out["eval_episodes"]
    if config.algorithm != "update_rule":
        for name in READ_BY:
            if "update_rule" in READ_BY[name] and len(READ_BY[name]) == 1:
                del out[name]
    return out


def train_settings(value: Any, path: str) -> Settings:
    """A task's `train` section: TrainConfig fields typed by their annotations (an unknown key is an error)."""
    mapping = mapping_section(value, path)
    return Settings({str(k): train_setting(str(k), v, f"{path}.{k}") for k, v in mapping.items()}, mapping)
