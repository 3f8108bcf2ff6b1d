"""Elo ratings: arithmetic, draws, n-player, state, inheritance in the league."""

from __future__ import annotations

import json

import pytest

from league.core.config import LeagueConfig
from league.core.league import League
from league.core.match import MatchRecord
from league.core.ratings import EloRatings

_counter = iter(range(10**9))


def match(a: str, b: str, result: str) -> MatchRecord:
    other = {"win": "loss", "loss": "win", "draw": "draw"}[result]
    return MatchRecord(
        f"ep-{next(_counter)}", {"p0": a, "p1": b}, {"p0": result, "p1": other}, 5, 0
    )


def test_win_between_equals_moves_k_over_two() -> None:
    elo = EloRatings(k=32, initial=1000)
    elo.update([match("a", "b", "win")])
    assert elo.rating("a") == pytest.approx(1016.0)
    assert elo.rating("b") == pytest.approx(984.0)


def test_expected_score_formula() -> None:
    elo = EloRatings(k=32, initial=1000, scale=400)
    elo.set("a", 1400)
    assert elo.expected("a", "b") == pytest.approx(10 / 11)
    assert elo.expected("b", "a") == pytest.approx(1 / 11)


def test_draw_is_a_draw_not_a_loss() -> None:
    elo = EloRatings(k=32)
    elo.update([match("a", "b", "draw")])
    assert elo.rating("a") == elo.rating("b") == 1000.0
    elo.set("strong", 1400)
    elo.update([match("strong", "a", "draw")])
    assert elo.rating("a") == pytest.approx(1000 + 32 * (0.5 - 1 / 11))
    assert elo.rating("strong") == pytest.approx(1400 - 32 * (0.5 - 1 / 11))


def test_updates_are_sequential_and_zero_sum() -> None:
    elo = EloRatings(k=20)
    records = [match("a", "b", "win"), match("b", "c", "win"), match("c", "a", "draw")]
    elo.update(records)
    total = sum(elo.rating(m) for m in "abc")
    assert total == pytest.approx(3000.0)
    # Second record sees a's win already applied: b starts it at 990.
    b_after_first = 990.0
    expected_bc = 1 / (1 + 10 ** ((1000 - b_after_first) / 400))
    assert elo.rating("c") != 1000.0
    assert elo.rating("b") == pytest.approx(b_after_first + 20 * (1 - expected_bc))


def test_self_play_does_not_move_ratings() -> None:
    elo = EloRatings()
    elo.update([match("a", "a", "win")])
    assert elo.rating("a") == 1000.0
    assert "a" not in elo.as_dict()


def test_n_player_uses_k_over_n_minus_one() -> None:
    elo = EloRatings(k=30)
    record = MatchRecord(
        "e", {"s0": "a", "s1": "b", "s2": "c"}, {"s0": "win", "s1": "loss", "s2": "loss"}, 9, 0
    )
    elo.update([record])
    assert elo.rating("a") == pytest.approx(1000 + 2 * 15 * 0.5)
    assert elo.rating("b") == pytest.approx(1000 - 15 * 0.5)


def test_state_round_trip() -> None:
    elo = EloRatings(k=24)
    elo.update([match("a", "b", "win"), match("b", "c", "draw")])
    copy = EloRatings(k=24)
    copy.set_state(json.loads(json.dumps(elo.get_state())))
    assert copy.as_dict() == elo.as_dict()
    copy.update([match("c", "a", "win")])
    elo.update([match("c", "a", "win")])
    assert copy.as_dict() == elo.as_dict()


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        EloRatings(k=0)
    with pytest.raises(ValueError):
        EloRatings(scale=-1)


def test_league_snapshot_inherits_parent_rating_and_tracks_updates() -> None:
    league = League(LeagueConfig(elo_k=32))
    league.record([match("main_0", "main_exploiter_0", "win")])
    assert league.ratings.rating("main_0") == pytest.approx(1016.0)
    sid = league.take_snapshot("main_0", iteration=1)
    assert league.snapshots[sid].rating == pytest.approx(1016.0)
    assert league.ratings.rating(sid) == pytest.approx(1016.0)
    league.record([match(sid, "league_exploiter_0", "loss")])
    assert league.snapshots[sid].rating == league.ratings.rating(sid)
    assert league.snapshots[sid].rating < 1016.0


def test_league_reset_restores_initial_or_source_rating() -> None:
    league = League(LeagueConfig(elo_k=32, elo_initial=1200))
    league.record([match("main_exploiter_0", "main_0", "win")])
    assert league.ratings.rating("main_exploiter_0") > 1200
    league.reset_player("main_exploiter_0")
    assert league.ratings.rating("main_exploiter_0") == 1200
    league.reset_player("league_exploiter_0", source="main_0")
    assert league.ratings.rating("league_exploiter_0") == league.ratings.rating("main_0")
