"""`league train` flags come from the TrainConfig fields: names, types, choices, help.

Fast: parsing only, no Ray (a parse error exits before `main` imports anything heavy).
"""

from __future__ import annotations

import argparse
import dataclasses

import pytest
import yaml

from league.cli import build_parser, main, train_config_from_args
from league.config import TrainConfig
from league.core.config import LeagueConfig

NON_FIELD_FLAGS = {"command", "config", "resume", "address", "detach", "debug"}


def train_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["train"]


def flag_actions() -> dict[str, argparse.Action]:
    return {opt: a for a in train_parser()._actions for opt in a.option_strings}


def expected_flags() -> dict[str, dataclasses.Field]:
    """Flag name -> field, spelled out here independently of league.cli."""
    flags = {}
    for f in dataclasses.fields(TrainConfig):
        if f.name == "league":
            for lf in dataclasses.fields(LeagueConfig):
                flags["--league." + lf.name.replace("_", "-")] = lf
        else:
            flags["--" + f.name.removesuffix("_").replace("_", "-")] = f
    return flags


def config_from(argv: list[str]) -> TrainConfig:
    return train_config_from_args(build_parser().parse_args(["train", *argv]))


def test_every_field_has_a_flag():
    actions = flag_actions()
    missing = sorted(set(expected_flags()) - set(actions))
    assert not missing
    assert "--lambda" in actions and "--lambda-" not in actions
    # Booleans are on/off pairs, lists take several values.
    assert "--no-shared-vf" in actions and "--no-episodes-to-numpy" in actions
    assert actions["--hidden-sizes"].nargs == "+"


def test_flag_help_is_the_field_help_plus_default():
    """--help-all's text for each flag (the brief --help shortens the main ones)."""
    actions = flag_actions()
    for flag, f in expected_flags().items():
        assert f.metadata["help"] in actions[flag].full_help, flag
        assert "(default: " in actions[flag].full_help, flag
    assert actions["--lr"].full_help.endswith("(default: 0.0003)")
    assert actions["--hidden-sizes"].full_help.endswith("(default: 256 256)")
    assert actions["--stop-timesteps"].full_help.endswith("(default: none)")


def _help_output(capsys, flag: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", flag])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_help_all_renders_every_flag_and_lists_choices(capsys):
    text = _help_output(capsys, "--help-all")
    assert "--mode {league,selfplay}" in text
    assert "--env TEXT" in text and "openspiel:GAME" in text
    assert "--env-kwargs JSON" in text and "--conv-filters JSON" in text
    assert "--league.max-snapshots INT" in text
    assert all(flag in text for flag in expected_flags())
    assert "--address" in text and "--detach" in text


def test_brief_help_is_grouped_and_short(capsys):
    text = _help_output(capsys, "--help")
    assert len(text.splitlines()) <= 60, len(text.splitlines())
    for group in ("game", "run", "resources", "algorithm", "network", "league", "evaluation"):
        assert f"\n{group} flags:\n" in text, group
    assert "--env TEXT" in text and "--help-all" in text
    assert "--conv-filters" not in text  # a knob for --help-all


def test_json_flags_parse_and_refuse_bad_json(capsys):
    cfg = config_from(["--env", "go9", "--env-kwargs", '{"komi": 5.5}'])
    assert cfg.env_kwargs == {"komi": 5.5} and cfg.game == 'go9{"komi":5.5}'
    cfg = config_from(["--conv-filters", "[[8, 3, 1]]", "--encoder", "conv"])
    assert cfg.model_config["conv_filters"] == [[8, 3, 1]]
    for flag, value in (
        ("--env-kwargs", "{oops"),
        ("--env-kwargs", "[1]"),
        ("--conv-filters", "[1]"),
    ):
        with pytest.raises(SystemExit):
            config_from([flag, value])
        assert flag.removeprefix("--") in capsys.readouterr().err


def test_flags_parse_into_train_config():
    cfg = config_from(
        ["--lr", "0.001", "--hidden-sizes", "64", "64", "--no-shared-vf", "--world-model"]
        + ["--lambda", "0.9", "--env", "connect_four", "--mode", "selfplay"]
        + ["--num-cpus", "3", "--stop-minutes", "2.5", "--league.max-snapshots", "10"]
    )
    assert cfg.lr == 0.001
    assert cfg.hidden_sizes == [64, 64]
    assert cfg.shared_vf is False and cfg.world_model is True
    assert cfg.lambda_ == 0.9
    assert (cfg.env, cfg.mode) == ("connect_four", "selfplay")
    assert cfg.num_cpus == 3 and cfg.stop_minutes == 2.5
    assert cfg.league.max_snapshots == 10
    assert cfg.league.active_set_size == LeagueConfig().active_set_size


def test_absent_flags_leave_no_value_behind():
    args = build_parser().parse_args(["train"])
    assert set(vars(args)) == NON_FIELD_FLAGS


def test_flags_override_only_their_own_config_file_keys(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "lr": 0.005,
                "seed": 7,
                "shared_vf": True,
                "hidden_sizes": [32],
                "stop_timesteps": 1000,
                "league": {"max_snapshots": 5, "active_set_size": 3},
            }
        )
    )
    cfg = config_from(["--config", str(path), "--seed", "3", "--league.active-set-size", "2"])
    assert (cfg.lr, cfg.shared_vf, cfg.hidden_sizes) == (0.005, True, [32])
    assert cfg.seed == 3
    assert (cfg.league.max_snapshots, cfg.league.active_set_size) == (5, 2)

    cfg = config_from(["--config", str(path), "--no-shared-vf", "--stop-timesteps", "none"])
    assert cfg.shared_vf is False and cfg.stop_timesteps is None
    assert cfg.league.active_set_size == 3


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--lr", "abc"], "argument --lr: invalid float value: 'abc'"),
        (["--hidden-sizes", "64", "x"], "argument --hidden-sizes: invalid int value: 'x'"),
        (["--hidden-sizes"], "argument --hidden-sizes: expected at least one argument"),
        (["--stop-timesteps", "soon"], "argument --stop-timesteps: invalid int value"),
        (["--env", "chess"], "unknown game 'chess'; known games: tictactoe, connect_four, rps"),
        (["--mode", "ladder"], "unknown mode 'ladder'; known modes: league, selfplay"),
        (["--league.max-snapshots", "1.5"], "argument --league.max-snapshots: invalid int"),
        (["--shared-vf", "yes"], "unrecognized arguments: yes"),
    ],
)
def test_bad_value_is_one_error_line(capsys, tmp_path, argv, expected):
    # argparse refuses what it can parse (SystemExit); the rest is refused by the config.
    try:
        code = main(["train", *argv, "--run-dir", str(tmp_path / "r")])
    except SystemExit as exit_info:
        code = exit_info.code
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith("league: error:") and expected in err


def test_a_game_brings_its_own_defaults_and_flags_override_them(tmp_path):
    from league.presets import game_settings

    tuned = game_settings("tictactoe")
    assert tuned, "tictactoe has measured defaults"
    cfg = config_from(["--env", "tictactoe"])
    for name, value in tuned.items():
        if name == "league":
            for knob, setting in value.items():
                assert getattr(cfg.league, knob) == setting, knob
        else:
            assert getattr(cfg, name) == value, name
    # a league flag changes one knob and keeps the game's others
    one = config_from(["--env", "tictactoe", "--league.main-learner-share", "0.8"])
    assert one.league.main_learner_share == 0.8
    assert one.league.main_exploiter_prob == tuned["league"]["main_exploiter_prob"]
    assert config_from(["--env", "tictactoe", "--entropy-coeff", "0.2"]).entropy_coeff == 0.2
    file = tmp_path / "c.yaml"
    file.write_text(yaml.safe_dump({"env": "tictactoe", "lr": 0.002}))
    from_file = config_from(["--config", str(file)])
    assert from_file.lr == 0.002 and from_file.entropy_coeff == tuned["entropy_coeff"]
    # Another game does not inherit tictactoe's tuning.
    other = config_from(["--env", "connect_four"])
    assert (other.entropy_coeff, other.lr, other.num_epochs) == (
        TrainConfig.entropy_coeff,  # the field defaults
        TrainConfig.lr,
        TrainConfig.num_epochs,
    )


def test_the_example_config_file_loads():
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "configs" / "example.yaml"
    cfg = config_from(["--config", str(path)])
    assert cfg.env == "connect_four" and cfg.league.main_learner_share == 0.6


def test_scaling_flags_reach_rllib():
    """The learner and env-runner placement flags end up in RLlib's config."""
    from league.training.algorithm import build_ppo_config

    cfg = config_from(
        ["--num-learners", "1", "--num-cpus-per-learner", "0.25", "--num-gpus-per-learner", "0.5"]
        + ["--env-runner-resources", '{"runner_node": 1}', "--env-runner-probe-timeout-s", "5"]
    )
    assert (cfg.num_learners, cfg.num_cpus_per_learner, cfg.num_gpus_per_learner) == (1, 0.25, 0.5)
    rllib = build_ppo_config(cfg)
    assert rllib.num_learners == 1
    assert rllib.num_cpus_per_learner == 0.25 and rllib.num_gpus_per_learner == 0.5
    assert rllib.custom_resources_per_env_runner == {"runner_node": 1}
    assert rllib.restart_failed_env_runners and rllib.env_runner_health_probe_timeout_s == 5
    # Defaults: the learner in the driver process, RLlib's automatic CPU count.
    default = build_ppo_config(config_from([]))
    assert default.num_learners == 0 and default.num_cpus_per_learner == "auto"


def test_league_entropy_bonus_applies_in_league_mode_only():
    from league.training.algorithm import build_appo_config, build_ppo_config

    league = config_from(["--env", "connect_four", "--entropy-coeff", "0.02"])
    assert league.league.entropy_coeff is None  # unset: the run's own
    assert build_ppo_config(league).entropy_coeff == 0.02
    tuned = config_from(["--env", "connect_four", "--league.entropy-coeff", "0.07"])
    assert build_ppo_config(tuned).entropy_coeff == 0.07
    assert build_appo_config(tuned.replace(algo="appo")).entropy_coeff == 0.07
    selfplay = config_from(
        ["--env", "connect_four", "--mode", "selfplay", "--league.entropy-coeff", "0.07"]
    )
    assert build_ppo_config(selfplay).entropy_coeff == selfplay.entropy_coeff != 0.07
    with pytest.raises(ValueError, match="entropy_coeff must be <= 100"):
        LeagueConfig(entropy_coeff=101.0)


def test_exploiters_get_their_own_entropy_bonus_in_league_mode():
    from league.training.algorithm import build_ppo_config

    flags = [
        "--env",
        "connect_four",
        "--entropy-coeff",
        "0.02",
        "--league.num-league-exploiters",
        "1",
    ]
    sharp = config_from([*flags, "--league.exploiter-entropy-coeff", "0.001"])
    config = build_ppo_config(sharp)
    assert config.get_config_for_module("main_0").entropy_coeff == 0.02
    for exploiter in ("main_exploiter_0", "league_exploiter_0"):
        assert config.get_config_for_module(exploiter).entropy_coeff == 0.001
    # Unset, or in self-play, nobody gets an override.
    assert build_ppo_config(config_from(flags)).algorithm_config_overrides_per_module == {}
    selfplay = config_from([*flags, "--mode", "selfplay", "--league.exploiter-entropy-coeff", "0"])
    assert build_ppo_config(selfplay).algorithm_config_overrides_per_module == {}
    with pytest.raises(ValueError, match="exploiter_entropy_coeff must be"):
        LeagueConfig(exploiter_entropy_coeff=-1.0)
