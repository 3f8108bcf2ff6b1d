"""Connect-four tactics diagnostic: perfect, uniform and blind players score as they must."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

import envs.connect_four_rules as c4
from envs.opponents import ConnectFourSearch, RandomPlayer
from league.tools.tactics import connect_four_tactics


class HalfBlindToWins:
    """Search's moves, except that where it can win it gives the winning moves only
    half its probability (the other half to the rest, while there is a rest)."""

    def action_probs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        probs = ConnectFourSearch().action_probs(obs)
        board = c4.decode_obs(obs["observation"])
        legal = np.asarray(obs["action_mask"]).astype(bool)
        winning = c4.winning_columns(board, 1)[0] & legal
        others = legal & ~winning
        if winning.any() and others.any():
            probs = 0.5 * winning / winning.sum() + 0.5 * others / others.sum()
        return probs


def test_the_search_player_is_tactically_perfect():
    result = connect_four_tactics(ConnectFourSearch(), games=30, seed=1)
    assert result.win == pytest.approx(1.0) and result.block == pytest.approx(1.0)
    assert result.win_positions > 0 and result.block_positions > 0


def test_uniform_play_scores_about_one_move_in_the_legal_ones():
    result = connect_four_tactics(RandomPlayer(), games=60, seed=2)
    assert result.win_positions > 30 and result.block_positions > 30
    assert 0.1 < result.win < 0.25 and 0.1 < result.block < 0.25


def test_a_player_half_blind_to_its_wins_scores_half_on_them():
    result = connect_four_tactics(HalfBlindToWins(), games=60, seed=3)
    assert result.win_positions > 30
    assert 0.45 < result.win < 0.6 and result.block == pytest.approx(1.0)


def test_games_must_be_positive():
    with pytest.raises(ValueError, match="games must be >= 1"):
        connect_four_tactics(RandomPlayer(), games=0)
