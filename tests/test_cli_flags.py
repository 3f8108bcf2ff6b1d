"""`league train` flags come from the TrainConfig fields: names, types, choices, help.

Fast: parsing only, no Ray (a parse error exits before `main` imports anything heavy).
"""

from __future__ import annotations

import argparse
import dataclasses

import pytest
import yaml

from league.cli import build_parser, main, train_config_from_args
from league.config import GROUPS, PPOSettings, TrainConfig
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
    for group in dataclasses.fields(TrainConfig):
        for f in dataclasses.fields(GROUPS[group.name]):
            flags[f"--{group.name}." + f.name.removesuffix("_").replace("_", "-")] = f
    return flags


def config_from(argv: list[str]) -> TrainConfig:
    return train_config_from_args(build_parser().parse_args(["train", *argv]))


def test_every_field_has_a_flag():
    actions = flag_actions()
    missing = sorted(set(expected_flags()) - set(actions))
    assert not missing
    assert "--ppo.lambda" in actions and "--ppo.lambda-" not in actions
    # Booleans are on/off pairs, lists take several values.
    assert "--no-model.shared-vf" in actions and "--no-resources.episodes-to-numpy" in actions
    assert actions["--model.hidden-sizes"].nargs == "+"


def test_flag_help_is_the_field_help_plus_default():
    """--help-all's text for each flag (the brief --help shortens the main ones)."""
    actions = flag_actions()
    for flag, f in expected_flags().items():
        assert f.metadata["help"] in actions[flag].full_help, flag
        assert "(default: " in actions[flag].full_help, flag
    assert actions["--ppo.lr"].full_help.endswith("(default: 0.0003)")
    assert actions["--model.hidden-sizes"].full_help.endswith("(default: 256 256)")
    assert actions["--run.stop-timesteps"].full_help.endswith("(default: none)")


def _help_output(capsys, flag: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", flag])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_help_all_renders_every_flag_and_lists_choices(capsys):
    text = _help_output(capsys, "--help-all")
    assert "--run.mode, --mode {league,selfplay}" in text
    assert "--game.env, --env TEXT" in text and "openspiel:GAME" in text
    assert "--game.env-kwargs, --env-kwargs JSON" in text and "--model.conv-filters JSON" in text
    assert "--league.max-snapshots INT" in text
    assert all(flag in text for flag in expected_flags())
    assert "--address" in text and "--detach" in text


def test_brief_help_is_grouped_and_short(capsys):
    text = _help_output(capsys, "--help")
    assert len(text.splitlines()) <= 60, len(text.splitlines())
    for group in ("game", "run", "resources", "ppo", "model", "league", "evaluation"):
        assert f"\n{group} flags:\n" in text, group
    assert "--game.env, --env TEXT" in text and "--help-all" in text
    assert "--model.conv-filters" not in text  # a knob for --help-all


def test_json_flags_parse_and_refuse_bad_json(capsys):
    cfg = config_from(["--env", "go9", "--env-kwargs", '{"komi": 5.5}'])
    assert cfg.game.env_kwargs == {"komi": 5.5} and cfg.game_id == 'go9{"komi":5.5}'
    cfg = config_from(["--model.conv-filters", "[[8, 3, 1]]", "--model.encoder", "conv"])
    assert cfg.model.network()["conv_filters"] == [[8, 3, 1]]
    for flag, value in (
        ("--env-kwargs", "{oops"),
        ("--env-kwargs", "[1]"),
        ("--model.conv-filters", "[1]"),
    ):
        with pytest.raises(SystemExit):
            config_from([flag, value])
        assert flag.removeprefix("--") in capsys.readouterr().err


def test_flags_parse_into_train_config():
    cfg = config_from(
        [
            "--ppo.lr",
            "0.001",
            "--model.hidden-sizes",
            "64",
            "64",
            "--no-model.shared-vf",
            "--model.world-model",
        ]
        + ["--ppo.lambda", "0.9", "--env", "connect_four", "--mode", "selfplay"]
        + ["--resources.num-cpus", "3", "--stop-minutes", "2.5", "--league.max-snapshots", "10"]
    )
    assert cfg.ppo.lr == 0.001
    assert cfg.model.hidden_sizes == [64, 64]
    assert cfg.model.shared_vf is False and cfg.model.world_model is True
    assert cfg.ppo.lambda_ == 0.9
    assert (cfg.game.env, cfg.run.mode) == ("connect_four", "selfplay")
    assert cfg.resources.num_cpus == 3 and cfg.run.stop_minutes == 2.5
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
                "ppo": {"lr": 0.005},
                "run": {"seed": 7, "stop_timesteps": 1000},
                "model": {"shared_vf": True, "hidden_sizes": [32]},
                "league": {"max_snapshots": 5, "active_set_size": 3},
            }
        )
    )
    cfg = config_from(["--config", str(path), "--seed", "3", "--league.active-set-size", "2"])
    assert (cfg.ppo.lr, cfg.model.shared_vf, cfg.model.hidden_sizes) == (0.005, True, [32])
    assert cfg.run.seed == 3
    assert (cfg.league.max_snapshots, cfg.league.active_set_size) == (5, 2)

    cfg = config_from(["--config", str(path), "--no-model.shared-vf", "--stop-timesteps", "none"])
    assert cfg.model.shared_vf is False and cfg.run.stop_timesteps is None
    assert cfg.league.active_set_size == 3


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--ppo.lr", "abc"], "argument --ppo.lr: invalid float value: 'abc'"),
        (["--lr", "abc"], "argument --lr: invalid float value: 'abc'"),
        (
            ["--model.hidden-sizes", "64", "x"],
            "argument --model.hidden-sizes: invalid int value: 'x'",
        ),
        (["--model.hidden-sizes"], "argument --model.hidden-sizes: expected at least one argument"),
        (["--stop-timesteps", "soon"], "argument --run.stop-timesteps/--stop-timesteps: invalid"),
        (["--env", "chess"], "unknown game 'chess'; known games: tictactoe, connect_four, rps"),
        (["--mode", "ladder"], "unknown mode 'ladder'; known modes: league, selfplay"),
        (["--league.max-snapshots", "1.5"], "argument --league.max-snapshots: invalid int"),
        (["--model.shared-vf", "yes"], "unrecognized arguments: yes"),
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
    for group, values in tuned.items():
        for name, value in values.items():
            assert getattr(getattr(cfg, group), name) == value, (group, name)
    # a league flag changes one knob and keeps the game's others
    one = config_from(["--env", "tictactoe", "--league.main-learner-share", "0.8"])
    assert one.league.main_learner_share == 0.8
    assert one.league.main_exploiter_prob == tuned["league"]["main_exploiter_prob"]
    assert (
        config_from(["--env", "tictactoe", "--ppo.entropy-coeff", "0.2"]).ppo.entropy_coeff == 0.2
    )
    file = tmp_path / "c.yaml"
    file.write_text(yaml.safe_dump({"game": {"env": "tictactoe"}, "ppo": {"lr": 0.002}}))
    from_file = config_from(["--config", str(file)])
    assert (
        from_file.ppo.lr == 0.002 and from_file.ppo.entropy_coeff == tuned["ppo"]["entropy_coeff"]
    )
    # Another game does not inherit tictactoe's tuning.
    other = config_from(["--env", "connect_four"])
    assert (other.ppo.entropy_coeff, other.ppo.lr, other.ppo.num_epochs) == (
        PPOSettings.entropy_coeff,  # the field defaults
        PPOSettings.lr,
        PPOSettings.num_epochs,
    )


def test_the_example_config_file_loads():
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "configs" / "example.yaml"
    cfg = config_from(["--config", str(path)])
    assert cfg.game.env == "connect_four" and cfg.league.main_learner_share == 0.6


def test_scaling_flags_reach_rllib():
    """The learner and env-runner placement flags end up in RLlib's config."""
    from league.training.algorithm import build_ppo_config

    cfg = config_from(
        [
            "--resources.num-learners",
            "1",
            "--resources.num-cpus-per-learner",
            "0.25",
            "--resources.num-gpus-per-learner",
            "0.5",
        ]
        + [
            "--resources.env-runner-resources",
            '{"runner_node": 1}',
            "--resources.env-runner-probe-timeout-s",
            "5",
        ]
    )
    assert (
        cfg.resources.num_learners,
        cfg.resources.num_cpus_per_learner,
        cfg.resources.num_gpus_per_learner,
    ) == (1, 0.25, 0.5)
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

    league = config_from(["--env", "connect_four", "--ppo.entropy-coeff", "0.02"])
    assert league.league.entropy_coeff is None  # unset: the run's own
    assert build_ppo_config(league).entropy_coeff == 0.02
    tuned = config_from(["--env", "connect_four", "--league.entropy-coeff", "0.07"])
    assert build_ppo_config(tuned).entropy_coeff == 0.07
    assert build_appo_config(tuned.replace(algo="appo")).entropy_coeff == 0.07
    selfplay = config_from(
        ["--env", "connect_four", "--mode", "selfplay", "--league.entropy-coeff", "0.07"]
    )
    assert build_ppo_config(selfplay).entropy_coeff == selfplay.ppo.entropy_coeff != 0.07
    with pytest.raises(ValueError, match="entropy_coeff must be <= 100"):
        LeagueConfig(entropy_coeff=101.0)


def test_exploiters_get_their_own_entropy_bonus_in_league_mode():
    from league.training.algorithm import build_ppo_config

    flags = [
        "--env",
        "connect_four",
        "--ppo.entropy-coeff",
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


def test_flat_flags_still_work_with_one_deprecation_note(tmp_path):
    """Flat flags of one release ago (`--lr`) set the grouped setting and say so in one
    line; the run's naming flags (`--env`, `--run-dir`, ...) are short forms, no note."""
    notes: list[str] = []

    def parsed(argv: list[str]) -> TrainConfig:
        args = build_parser().parse_args(["train", *argv])
        return train_config_from_args(args, note=notes.append)

    flat = parsed(["--env", "rps", "--lr", "0.002", "--no-shared-vf", "--num-epochs", "3"])
    assert (flat.ppo.lr, flat.model.shared_vf, flat.ppo.num_epochs) == (0.002, False, 3)
    assert flat == parsed(
        ["--game.env", "rps", "--ppo.lr", "0.002", "--no-model.shared-vf", "--ppo.num-epochs", "3"]
    )
    assert len(notes) == 1 and "deprecated" in notes[0], notes
    assert "--lr -> --ppo.lr" in notes[0] and "--num-epochs -> --ppo.num-epochs" in notes[0]
    notes.clear()
    parsed(["--env", "rps", "--run-dir", str(tmp_path / "r"), "--seed", "2", "--mode", "selfplay"])
    assert notes == []
    # A grouped flag wins over its flat one, whatever their order.
    assert parsed(["--ppo.lr", "0.001", "--lr", "0.005"]).ppo.lr == 0.001
    # A config file's flat keys: the same settings, one note naming the file.
    notes.clear()
    path = tmp_path / "flat.yaml"
    path.write_text(
        yaml.safe_dump({"env": "rps", "lr": 0.002, "num_epochs": 3, "shared_vf": False})
    )
    assert parsed(["--config", str(path)]) == flat
    assert len(notes) == 1 and str(path) in notes[0] and "lr -> ppo.lr" in notes[0], notes


def test_a_flat_flag_note_reaches_stderr_as_one_line(tmp_path, capsys):
    """`league train` prints the note once, then goes on (here: refuses a bad value)."""
    code = main(
        ["train", "--lr", "0.002", "--ppo.num-epochs", "0", "--run-dir", str(tmp_path / "r")]
    )
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 2, err
    assert err[0].startswith("league: note: flags: flat setting names are deprecated"), err
    assert err[1].startswith("league: error:") and "num_epochs must be >= 1" in err[1], err
