"""OpenSpiel games beyond the registry: simultaneous-move games through OpenSpiel's
turn-based conversion (hidden moves, exact measures still apply), and games whose
action space holds moves illegal in most states train on remote env runners (no
random illegal move from RLlib's environment check)."""

from __future__ import annotations

import pytest
from tiny_run import TINY_IN_PROCESS

from envs.registry import get_game
from league.config import TrainConfig
from league.tools.openspiel_exploitability import (
    GameTooLargeError,
    check_exact_measure,
    game_tree_size,
    uniform_measure,
)
from league.training.loop import train

GOOFSPIEL = "openspiel:goofspiel(num_cards=4)"


def test_simultaneous_games_come_turn_based_with_exact_measures():
    game = get_game(GOOFSPIEL)
    assert game.kind == "turn_based" and game.seats == ("player_0", "player_1")
    # RLLIB_NOTES: uniform play on the converted goofspiel(num_cards=4) is 0.7465.
    assert uniform_measure(GOOFSPIEL) == pytest.approx(0.7465, abs=1e-4)


def test_exact_measures_refuse_trees_too_large_before_any_work():
    assert game_tree_size("kuhn_poker_3p") == 617
    with pytest.raises(GameTooLargeError, match="more than 3,000,000 histories"):
        check_exact_measure("tiny_bridge_4p")


@pytest.mark.parametrize("game", ["openspiel:breakthrough(rows=5,columns=5)", GOOFSPIEL])
def test_games_with_mostly_illegal_actions_train_on_env_runners(ray_session, tmp_path, game):
    cfg = TrainConfig.from_dict(
        TINY_IN_PROCESS | {"env": game, "run_dir": str(tmp_path / "run"), "num_env_runners": 1}
    )
    summary = train(cfg, log=lambda _line: None)
    assert summary.iterations >= 2 and summary.env_steps >= 400
