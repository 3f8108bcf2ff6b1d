"""Tuning as data (league/presets.yaml): presets and each registry game's settings,
every value with its evidence; one resolution whichever way a user gives settings."""

from __future__ import annotations

import pytest

from envs.registry import REGISTRY_NAMES
from league.cli import build_parser, main, train_config_from_args
from league.config import ConfigError, TrainConfig, game_kind
from league.config_groups import PPOSettings
from league.core.config import LeagueConfig
from league.presets import (
    evidence,
    game_entries,
    game_settings,
    kind_entries,
    kind_settings,
    preset_names,
    preset_settings,
)


def _flatten(settings: dict) -> set[str]:
    return {f"{group}.{key}" for group, values in settings.items() for key in values}


def test_every_entry_names_known_settings_and_has_evidence() -> None:
    assert set(game_entries()) <= set(REGISTRY_NAMES)
    for name in (*preset_names(), *game_entries(), *kind_entries()):
        is_game = name in game_entries()
        if name in preset_names():
            settings = preset_settings(name)
        else:
            settings = game_settings(name) if is_game else kind_settings(name)
        assert settings, name
        # Every key a real setting with a valid value (a preset on a game of its own).
        TrainConfig.from_dict({"env": name if is_game else "openspiel:tic_tac_toe", **settings})
        items = evidence(name)
        assert items, f"{name}: no evidence"
        for item in items:
            assert item["figure"] and item["source"], (name, item)
            assert set(item["settings"]) <= _flatten(settings), (name, item["settings"])


def test_the_registry_holds_no_hyperparameter() -> None:
    import envs.registry as registry

    text = open(registry.__file__).read()
    for knob in ("entropy_coeff", "main_self_play_prob", "hidden_sizes", "lr_final"):
        assert knob not in text, knob


def test_a_preset_applies_to_any_game_and_flags_still_win() -> None:
    game = "openspiel:breakthrough(rows=5,columns=5)"
    plain = TrainConfig.from_dict({"env": game})
    descent = TrainConfig.from_dict({"env": game, "preset": "descent"})
    assert (plain.ppo.magnet_coeff, descent.ppo.magnet_coeff) == (0.0, 0.5)
    assert descent.ppo.anneal_over == "run" and descent.league.main_exploiter_reset_to == "main"
    flagged = train_config_from_args(
        build_parser().parse_args(
            ["train", "--env", game, "--preset", "descent", "--ppo.lr", "1e-3"]
        )
    )
    assert flagged.ppo.lr == 1e-3 and flagged.ppo.magnet_coeff == 0.5
    # A preset over a registry game: the preset's values over the game's own.
    board_kuhn = TrainConfig.from_dict({"env": "kuhn_poker", "preset": "board"})
    assert board_kuhn.league.snapshot_step_budget == 50_000
    assert board_kuhn.ppo.entropy_coeff == game_settings("kuhn_poker")["ppo"]["entropy_coeff"]


@pytest.mark.parametrize(
    "env, kwargs",
    [
        ("openspiel:liars_dice", {}),  # imperfect information
        ("openspiel:goofspiel(num_cards=4)", {}),  # simultaneous moves, hidden when turn-based
        ("openspiel:goofspiel", {"num_cards": 4}),
    ],
)
def test_games_outside_the_registry_that_need_mixed_play_get_their_kinds_settings(
    env, kwargs
) -> None:
    cfg = TrainConfig.from_dict({"env": env, "env_kwargs": kwargs})
    expected = kind_settings("mixed_play")["ppo"]
    assert (cfg.ppo.entropy_coeff, cfg.ppo.magnet_coeff, cfg.ppo.lr_final) == (
        expected["entropy_coeff"],
        expected["magnet_coeff"],
        expected["lr_final"],
    )
    assert cfg.ppo.magnet_coeff > 0  # unlike the generic defaults
    # Flags still win.
    assert (
        TrainConfig.from_dict(
            {"env": env, "env_kwargs": kwargs, "magnet_coeff": 0.0}
        ).ppo.magnet_coeff
        == 0.0
    )


def test_perfect_information_games_outside_the_registry_get_the_board_mix() -> None:
    cfg = TrainConfig.from_dict({"env": "openspiel:breakthrough(rows=5,columns=5)"})
    assert cfg.ppo == PPOSettings()  # the board preset is league settings only
    board = preset_settings("board")["league"]
    assert cfg.league.main_self_play_prob == board["main_self_play_prob"]
    assert cfg.league.main_learner_share == board["main_learner_share"]
    assert cfg.league.main_self_play_prob != LeagueConfig.main_self_play_prob
    # Not an OpenSpiel game, or no such game: the generic defaults.
    assert (
        game_kind("pettingzoo.classic.connect_four_v3:env", {})
        == game_kind("openspiel:no_such_game", {})
        == ""
    )
    # A registry game by its OpenSpiel name keeps its own entry, not its kind's.
    kuhn = TrainConfig.from_dict({"env": "openspiel:kuhn_poker"})
    assert kuhn.ppo.entropy_coeff == game_settings("kuhn_poker")["ppo"]["entropy_coeff"]
    assert kuhn.ppo.magnet_coeff == 0.0


def test_an_unknown_preset_is_one_line(tmp_path, capsys) -> None:
    with pytest.raises(
        ConfigError, match="unknown preset 'fast'; known presets: poker, board, descent"
    ):
        TrainConfig.from_dict({"env": "tictactoe", "preset": "fast"})
    assert main(["train", "--preset", "fast", "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("league: error:") and err.count("\n") == 1 and "preset" in err
    assert not (tmp_path / "r").exists()
