"""Library errors name settings as a Python caller set them; the command line names its flags instead."""

import numpy as np
import pytest

from metadisco.cli import main
from metadisco.cli.common import SETTING_FLAGS
from metadisco.core.errors import SettingError, UserError
from metadisco.evaluate import prepare


def test_only_whole_names_of_the_error_s_settings_become_flags():
    rng = np.random.default_rng(0)
    words = ["envs", "held_out_envs", "num_seeds", "seeds", "seed", "tune", "devices", "device(s)", "env.envs",
             "the", "4", "'lr=x'", "--envs", "'envs'", "'runs/seed'", '"tune"', "doesn't"]  # quoted: left alone
    for _ in range(300):
        text = " ".join(rng.choice(words, size=int(rng.integers(1, 9))))
        settings = tuple(rng.choice(["envs", "num_seeds", "seed", "tune", "devices"], size=2, replace=False))
        error = SettingError(text, settings)
        assert isinstance(error, UserError) and str(error) == text  # what a Python caller reads
        out = error.for_flags(SETTING_FLAGS).split(" ")
        for before, after in zip(text.split(" "), out, strict=True):
            expected = SETTING_FLAGS[before] if before in settings else before
            assert after == expected, (text, settings)


def test_a_quoted_value_keeps_the_words_of_settings():
    error = SettingError("'runs/out' is not empty; pass resume to continue the run there, or choose a new out",
                         ("resume", "out"))
    assert error.for_flags(SETTING_FLAGS) == ("'runs/out' is not empty; pass --resume to continue the run there, "
                                              "or choose a new --out")
    error = SettingError("override doesn't fit 'override' (override's key)", ("override",))
    assert error.for_flags(SETTING_FLAGS) == "--set doesn't fit 'override' (--set's key)"


def test_a_setting_it_does_not_name_is_left_alone():
    error = SettingError("envs and tune", ("envs",))
    assert error.for_flags(SETTING_FLAGS) == "--envs and tune"
    assert error.for_flags({}) == "envs and tune"


def test_the_library_names_the_setting_and_the_command_line_the_flag(capsys):
    with pytest.raises(SettingError, match=r"^give envs ") as caught:
        prepare("dpo", None, ["ppo"], 2)
    assert "--" not in str(caught.value)
    with pytest.raises(SettingError, match=r"^num_seeds must be a positive integer, got 0"):
        prepare("dpo", ["CartPole-v1"], ["ppo"], 0)
    assert main(["evaluate", "dpo", "--baselines", "ppo", "--out", "/nonexistent/never"]) == 2
    err = capsys.readouterr().err
    assert "error: give --envs ID" in err and err.count("\n") == 1


def test_every_flag_is_a_long_option_and_every_setting_an_identifier():
    for setting, flag in SETTING_FLAGS.items():
        assert setting.isidentifier() and flag.startswith("--") and flag[2:].replace("-", "_").isidentifier()
