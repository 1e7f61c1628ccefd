import pytest

from metadisco.core.errors import UserError
from metadisco.trainers.config import TrainConfig, apply_overrides, default_preset_name, get_preset


def test_presets_follow_env_family():
    assert default_preset_name("CartPole-v1") == "classic"
    assert default_preset_name("SpaceInvaders-MinAtar") == "minatar"
    assert default_preset_name("brax/ant") == "brax"
    brax = get_preset("brax")
    assert (brax.num_envs, brax.num_steps, brax.options.num_minibatches, brax.hidden_sizes) == \
        (2048, 10, 32, (256, 256))
    assert brax.normalize_obs and brax.normalize_reward and not brax.anneal_lr
    minatar = get_preset("minatar")
    assert (minatar.num_envs, minatar.lr, minatar.activation) == (64, 5e-3, "relu")


def test_overrides_are_typed():
    cfg = apply_overrides(TrainConfig(), ["lr=1e-3", "num_envs=8", "anneal_lr=false", "hidden_sizes=32,16",
                                          "total_timesteps=1e5"])
    assert cfg.lr == 1e-3 and cfg.num_envs == 8 and cfg.anneal_lr is False
    assert cfg.hidden_sizes == (32, 16) and cfg.total_timesteps == 100_000
    assert TrainConfig().num_envs == 4  # the original is untouched (frozen)


@pytest.mark.parametrize("item, message", [
    ("learning_rate=1e-3", "unknown setting 'learning_rate'"),
    ("lr", "expected key=value"),
    ("num_envs=four", "num_envs must be an integer, got 'four'"),
    ("num_envs=2.5", "num_envs must be an integer, got 2.5"),
    ("anneal_lr=maybe", "anneal_lr must be true or false, got 'maybe'"),
    ("value_clip_eps=0.3", "value_clip_eps moved from the trainer settings to the clipped-L2 value loss"),
    ("=3", "the key is empty"),
])
def test_bad_overrides_are_user_errors(item, message):
    with pytest.raises(UserError, match=message):
        apply_overrides(TrainConfig(), [item])


def test_unknown_setting_suggests_close_name():
    with pytest.raises(UserError, match="did you mean 'num_envs'"):
        apply_overrides(TrainConfig(), ["num_env=3"])


@pytest.mark.parametrize("changes, message", [
    ({"total_timesteps": 100}, "smaller than one update"),
    ({"total_timesteps": 0}, "timesteps must be positive"),
    ({"num_minibatches": 3}, "must divide by num_minibatches"),
    ({"activation": "gelu"}, "unknown activation"),
    ({"final_window": 0.0}, "final_window"),
])
def test_validate_names_the_bad_setting(changes, message):
    with pytest.raises(UserError, match=message):
        TrainConfig().with_settings(changes).validate()


def test_config_is_hashable():
    assert hash(TrainConfig()) == hash(TrainConfig())


def test_pqn_presets_and_the_algorithm_picks_the_family_preset():
    from metadisco.runs.seeds import resolve_config

    assert default_preset_name("CartPole-v1", "pqn") == "pqn_classic"
    assert default_preset_name("Breakout-MinAtar", "pqn") == "pqn_minatar"
    assert default_preset_name("craftax/Craftax-Classic-Symbolic-v1", "pqn") == "pqn_craftax"
    assert default_preset_name("craftax/Craftax-Classic-Symbolic-v1") == "craftax"
    with pytest.raises(UserError, match="algorithm pqn has no preset for brax/ant"):
        default_preset_name("brax/ant", "pqn")
    cartpole = get_preset("pqn_classic")  # mttga/purejaxql pqn_cartpole.yaml
    assert (cartpole.algorithm, cartpole.num_envs, cartpole.num_steps, cartpole.options.update_epochs,
            cartpole.options.num_minibatches, cartpole.lr, cartpole.gae_lambda, cartpole.options.max_grad_norm,
            cartpole.options.reward_scale, cartpole.options.eps_finish) == \
        ("pqn", 32, 64, 4, 16, 1e-4, 0.95, 10.0, 0.1, 0.2)
    # --set algorithm=pqn (or a TD objective's algorithm) starts from PQN's preset, not PPO's numbers.
    assert resolve_config("CartPole-v1", overrides=["algorithm=pqn"]) == cartpole
    assert resolve_config("CartPole-v1", algorithm="pqn", overrides={"lr": 3e-4}).lr == 3e-4
    assert resolve_config("Breakout-MinAtar", algorithm="pqn").gae_lambda == 0.65


@pytest.mark.parametrize("preset, item, message", [
    ("classic", "eps_start=0.5", "eps_start is a setting of algorithm ddqn, dqn and pqn, not of ppo"),
    ("pqn_classic", "ent_coef=0.1", "ent_coef is a setting of algorithm ppo, not of pqn"),
    ("classic", "algorithm=sac", "unknown algorithm 'sac'"),
    ("classic", "buffer_size=100", "buffer_size is a setting of algorithm ddqn and dqn, not of ppo"),
    ("dqn_classic", "update_epochs=2", "update_epochs is a setting of algorithm ppo and pqn, not of dqn"),
    ("dqn_classic", "buffer_batch=20000", "buffer_batch 20000 is larger than buffer_size 10000"),
    ("dqn_classic", "tau=0", "tau"),
    ("pqn_classic", "eps_finish=1.5", "eps_finish"),
    ("pqn_classic", "reward_scale=0", "reward_scale"),
    ("classic", "replay_batch=8", "replay_batch is a setting of algorithm update_rule, not of ppo"),
    ("update_rule_classic", "update_epochs=2", "update_epochs is a setting of algorithm ppo and pqn"),
    ("update_rule_classic", "replay_batch=2048", "replay_capacity 1024 must hold replay_batch 2048"),
    ("update_rule_classic", "num_steps=1", "num_steps must be at least 2"),
    ("update_rule_classic", "max_abs_update=0", "max_abs_update"),
])
def test_settings_of_the_other_algorithm_are_errors(preset, item, message):
    with pytest.raises(UserError, match=message):
        apply_overrides(get_preset(preset), [item]).validate()


def test_update_rule_presets_and_records():
    from metadisco.runs.seeds import resolve_config
    from metadisco.trainers.config import config_to_dict

    assert default_preset_name("Catch-bsuite", "update_rule") == "update_rule_classic"
    catch = resolve_config("Catch-bsuite", algorithm="update_rule")  # DeepMind's eval notebook on Catch
    assert (catch.num_envs, catch.num_steps, catch.num_updates, catch.options.replay_capacity,
            catch.options.replay_batch, catch.lr,
            catch.gamma, catch.hidden_sizes) == (2, 29, 1000, 1024, 64, 1e-2, 0.997, (512, 512))
    assert resolve_config("Breakout-MinAtar", algorithm="update_rule").num_envs == 16
    # An algorithm's own settings are in its records only: the replay's in the update rule's, epsilon's in PQN's
    # and DQN's.
    for preset in ("classic", "minatar", "pqn_classic"):
        assert not {"replay_capacity", "replay_batch", "max_abs_update"} & set(config_to_dict(get_preset(preset)))
    for preset in ("classic", "minatar", "update_rule_classic"):
        assert not {"eps_start", "eps_finish", "eps_decay", "reward_scale"} & set(config_to_dict(get_preset(preset)))
    assert config_to_dict(catch)["replay_batch"] == 64
