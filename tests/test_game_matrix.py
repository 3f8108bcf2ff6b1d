"""The compatibility matrix on a fixed list of games across the kinds the league
reads: registry, OpenSpiel (turn-based, simultaneous, N players) and PettingZoo
families; each trains (a random legal episode, then the league's env runner samples)
or is refused with its reason filed under the right group."""

from __future__ import annotations

import pytest

from league.training.game_matrix import check_game, every_game

TRAINS = [
    "tictactoe",
    "rps",
    "kuhn_poker_3p",
    "simple_tag",
    "battle",
    "openspiel:goofspiel(num_cards=4)",
    "openspiel:breakthrough(rows=5,columns=5)",
    "openspiel:phantom_ttt",
    "openspiel:dark_hex(board_size=3)",
    "openspiel:liars_dice",
    "openspiel:tiny_bridge_2p",
    "pettingzoo.classic.texas_holdem_no_limit_v6:env",
    "mpe2.simple_spread_v3:parallel_env",
    "mpe2.simple_push_v3:parallel_env",
]
REFUSED = {
    "openspiel:blackjack": "one player",
    "pettingzoo.classic.chess_v6:env": "needs the package `chess`",
    "pettingzoo.butterfly.pistonball_v6:parallel_env": "needs the package `pymunk`",
}


@pytest.mark.parametrize("reference", TRAINS)
def test_games_that_train(reference):
    row = check_game(reference, max_steps=2000, sample_steps=32)
    assert row.status == "trains", row.reason
    assert row.seats >= 2 and row.teams >= 2 and row.episode_steps > 0
    assert row.observation and row.encoder in ("mlp", "conv")


@pytest.mark.parametrize(("reference", "group"), list(REFUSED.items()))
def test_games_refused_with_their_reason(reference, group):
    row = check_game(reference)
    assert row.status == "refused" and row.group.startswith(group), row
    assert row.reason and "\n" not in row.reason


def test_every_installed_game_is_listed_once():
    games = [reference for reference, _ in every_game()]
    assert len(games) == len(set(games))
    assert "openspiel:leduc_poker" in games and "tictactoe" in games
    assert "magent2.environments.battle_v4:parallel_env" in games
    assert sum(g.startswith("openspiel:") for g in games) >= 80
