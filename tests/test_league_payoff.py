"""Payoff table (decay arithmetic, priors, symmetry, state) and MatchRecord."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from league.core.match import MatchRecord, pairwise_scores
from league.core.payoff import PayoffTable

_counter = iter(range(10**9))


def match(a: str, b: str, result: str, iteration: int = 0) -> MatchRecord:
    """Two-seat record; ``result`` is from ``a``'s point of view."""
    other = {"win": "loss", "loss": "win", "draw": "draw"}[result]
    return MatchRecord(
        episode_id=f"ep-{next(_counter)}",
        modules={"player_0": a, "player_1": b},
        outcomes={"player_0": result, "player_1": other},
        length=7,
        iteration=iteration,
    )


def test_decay_applies_once_per_update_then_adds() -> None:
    table = PayoffTable(decay=0.99)
    table.update([match("a", "b", "win"), match("a", "b", "win")])
    assert table.wdl("a", "b") == (2.0, 0.0, 0.0)
    table.update([])
    assert table.wdl("a", "b") == (2.0 * 0.99, 0.0, 0.0)
    table.update([match("a", "b", "draw"), match("b", "a", "win")])
    assert table.wdl("a", "b") == (2.0 * 0.99 * 0.99, 1.0, 1.0)
    wins = 2.0 * 0.99 * 0.99
    assert table.games("a", "b") == pytest.approx(wins + 2.0, rel=1e-15)
    assert table.win_rate("a", "b") == pytest.approx((wins + 0.5) / (wins + 2.0), rel=1e-15)


def test_both_orderings_agree() -> None:
    table = PayoffTable()
    table.update([match("x", "y", "win"), match("y", "x", "draw"), match("y", "x", "win")])
    assert table.wdl("x", "y") == (1.0, 1.0, 1.0)
    assert table.wdl("y", "x") == (1.0, 1.0, 1.0)
    table.update([match("x", "y", "win")])
    assert table.wdl("y", "x") == (0.99, 0.99, 1.99)
    assert table.games("x", "y") == table.games("y", "x")
    assert table.win_rate("x", "y") + table.win_rate("y", "x") == pytest.approx(1.0)
    assert table.win_rate("x", "y") > 0.5


def test_draws_count_half() -> None:
    table = PayoffTable()
    table.update([match("a", "b", "draw")] * 3 + [match("a", "b", "loss")])
    assert table.win_rate("a", "b") == pytest.approx(1.5 / 4)


def test_win_rate_lower_bound_is_wilsons_over_decayed_games() -> None:
    table = PayoffTable(decay=0.5)
    assert table.win_rate_lower_bound("a", "b", 1.96) == 0.0  # no games, no evidence
    table.update([match("a", "b", "win")] * 16 + [match("a", "b", "loss")] * 4)
    assert table.win_rate_lower_bound("a", "b", 1.96) == pytest.approx(0.5840, abs=1e-4)
    assert table.win_rate_lower_bound("a", "b", 0.0) == pytest.approx(0.8)
    # Decay halves the evidence, not the rate: the bound widens.
    table.update([])
    assert table.win_rate("a", "b") == pytest.approx(0.8)
    assert table.win_rate_lower_bound("a", "b", 1.96) == pytest.approx(0.4902, abs=1e-4)
    # Draws count half a win; the bound reads b's side as the complement's.
    table.update([match("a", "b", "draw")] * 10)
    w, d, games = 4.0, 10.0, 15.0  # 8 wins and 2 losses halved again, 10 draws
    assert table.win_rate_lower_bound("a", "b", 0.0) == pytest.approx((w + d / 2) / games)
    assert table.win_rate_lower_bound("b", "a", 0.0) == pytest.approx(1 - (w + d / 2) / games)
    assert table.win_rate_lower_bound("a", "a", 1.96) == 0.0


def test_prior_below_min_games() -> None:
    table = PayoffTable(min_games=3)
    table.update([match("a", "b", "win")] * 2)
    assert table.win_rate("a", "b") == 0.5
    table.update([match("a", "b", "win")] * 2)  # 2 * 0.99 + 2 = 3.98 games
    assert table.win_rate("a", "b") == 1.0
    assert table.win_rate("a", "nobody") == 0.5
    assert table.games("a", "nobody") == 0.0


def test_self_play_is_not_recorded() -> None:
    table = PayoffTable()
    table.update([match("a", "a", "win")])
    assert table.games("a", "a") == 0.0
    assert table.win_rate("a", "a") == 0.5
    assert table.get_state() == {"entries": []}


def test_n_player_record_scores_every_pair() -> None:
    record = MatchRecord(
        episode_id="e",
        modules={"p0": "a", "p1": "b", "p2": "c"},
        outcomes={"p0": "win", "p1": "loss", "p2": "loss"},
        length=3,
        iteration=0,
    )
    assert pairwise_scores(record) == [("a", "b", 1.0), ("a", "c", 1.0), ("b", "c", 0.5)]
    table = PayoffTable()
    table.update([record])
    assert table.wdl("a", "c") == (1.0, 0.0, 0.0)
    assert table.wdl("c", "b") == (0.0, 1.0, 0.0)


def test_remove_forgets_a_module() -> None:
    table = PayoffTable()
    table.update([match("a", "b", "win"), match("a", "c", "win"), match("b", "c", "win")])
    table.remove("a")
    assert [entry[:2] for entry in table.get_state()["entries"]] == [["b", "c"]]
    assert table.games("a", "b") == 0.0
    assert table.games("b", "c") == 1.0


def test_state_round_trip_is_json_and_exact() -> None:
    table = PayoffTable(decay=0.99, min_games=2)
    for _ in range(5):
        table.update([match("m@1", "m", "win"), match("m", "e", "draw"), match("e", "m@1", "loss")])
    state = json.loads(json.dumps(table.get_state()))
    copy = PayoffTable(decay=0.99, min_games=2)
    copy.set_state(state)
    assert copy.get_state() == table.get_state()
    for a, b in [("m", "m@1"), ("e", "m"), ("m@1", "e")]:
        assert copy.wdl(a, b) == table.wdl(a, b)
        assert copy.win_rate(a, b) == table.win_rate(a, b)
    more = [match("m", "e", "win")]
    table.update(more)
    copy.update(more)
    assert copy.get_state() == table.get_state()


def test_set_state_rejects_unordered_entries() -> None:
    with pytest.raises(ValueError):
        PayoffTable().set_state({"entries": [["b", "a", 1.0, 0.0, 0.0]]})


def test_bad_construction() -> None:
    with pytest.raises(ValueError):
        PayoffTable(decay=0.0)
    with pytest.raises(ValueError):
        PayoffTable(min_games=-1)
    with pytest.raises(ValueError):
        PayoffTable().add_result("a", "b", 0.3)


# ---- MatchRecord ------------------------------------------------------------


def test_match_record_json_round_trip_and_pickle() -> None:
    record = match("main_0", "main_0@3", "draw", iteration=4)
    data = json.loads(json.dumps(record.to_dict()))
    assert MatchRecord.from_dict(data) == record
    assert pickle.loads(pickle.dumps(record)) == record
    assert hash(record) == hash(MatchRecord.from_dict(data))


def test_match_record_copies_its_maps() -> None:
    modules = {"p0": "a", "p1": "b"}
    record = MatchRecord("e", modules, {"p0": "win", "p1": "loss"}, 1, 0)
    modules["p0"] = "zzz"
    assert record.modules["p0"] == "a"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"episode_id": ""},
        {"modules": {"p0": "a"}, "outcomes": {"p0": "win"}},
        {"outcomes": {"p0": "win", "p2": "loss"}},
        {"outcomes": {"p0": "won", "p1": "loss"}},
        {"length": -1},
        {"iteration": 1.5},
    ],
)
def test_match_record_validation(kwargs: dict) -> None:
    base = {
        "episode_id": "e",
        "modules": {"p0": "a", "p1": "b"},
        "outcomes": {"p0": "win", "p1": "loss"},
        "length": 1,
        "iteration": 0,
    }
    with pytest.raises(ValueError):
        MatchRecord(**{**base, **kwargs})


# ---- the league's Nash (league.core.nash) -------------------------------------------


def test_maximin_of_rock_paper_scissors_is_uniform_with_value_zero():
    from league.core.nash import maximin

    rps = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], dtype=float)
    weights, value = maximin(rps)
    assert weights == pytest.approx([1 / 3] * 3, abs=1e-7)
    assert value == pytest.approx(0.0, abs=1e-9)


def test_maximin_of_a_biased_game_matches_the_closed_form():
    from league.core.nash import maximin

    # Row plays x on the first row: 4x - 1 against column 0, 1 - 2x against column 1;
    # they are equal at x = 1/3, where the value is 1/3.
    game = np.array([[3.0, -1.0], [-1.0, 1.0]])
    weights, value = maximin(game)
    assert weights == pytest.approx([1 / 3, 2 / 3], abs=1e-7)
    assert value == pytest.approx(1 / 3, abs=1e-7)


def test_league_nash_puts_all_weight_on_a_dominant_module():
    from league.core.nash import nash_weights

    table = PayoffTable(decay=1.0, min_games=0.0)
    for _ in range(10):
        table.add_result("strong", "weak", 1.0)
        table.add_result("strong", "mid", 1.0)
        table.add_result("mid", "weak", 1.0)
    assert nash_weights(table, ["weak", "mid", "strong"]) == pytest.approx({"strong": 1.0})


def test_league_nash_of_a_cycle_mixes_all_three():
    from league.core.nash import nash_weights

    table = PayoffTable(decay=1.0, min_games=0.0)
    for a, b in (("rock", "scissors"), ("scissors", "paper"), ("paper", "rock")):
        for _ in range(10):
            table.add_result(a, b, 1.0)
    weights = nash_weights(table, ["rock", "paper", "scissors"])
    assert weights == pytest.approx(dict.fromkeys(["rock", "paper", "scissors"], 1 / 3), abs=1e-7)


def test_payoff_matrix_from_entries_equals_the_dense_definition():
    from league.core.nash import payoff_matrix

    rng = np.random.default_rng(4)
    table = PayoffTable(decay=1.0, min_games=3.0)
    ids = [f"m{i}" for i in range(8)]
    for _ in range(60):
        a, b = rng.choice(8, 2, replace=False)
        table.add_result(ids[a], ids[b], float(rng.choice([0.0, 0.5, 1.0])))
    dense = np.array([[table.win_rate(a, b) - 0.5 if a != b else 0.0 for b in ids] for a in ids])
    assert payoff_matrix(table, ids) == pytest.approx(dense)


def test_a_snapshot_inherits_its_players_results_against_everyone_else():
    table = PayoffTable(decay=1.0)
    for score in (1.0, 1.0, 0.5, 0.0):
        table.add_result("main_0", "main_0@0", score)
    table.add_result("main_exploiter_0", "main_0", 1.0)
    table.add_result("main_exploiter_0", "other@3", 0.0)
    table.inherit("main_0@1", "main_0")
    assert table.wdl("main_0@1", "main_0@0") == table.wdl("main_0", "main_0@0") == (2, 1, 1)
    assert table.wdl("main_exploiter_0", "main_0@1") == (1, 0, 0)
    assert table.games("main_0@1", "main_0") == 0  # no results against its own player
    assert table.games("main_0@1", "other@3") == 0  # nor against modules its player never met
    # Later games of the player are its own (the snapshot's weights stay frozen).
    table.add_result("main_0", "main_0@0", 1.0)
    assert table.wdl("main_0@1", "main_0@0") == (2, 1, 1)


def test_league_nash_over_snapshots_sees_the_inherited_results():
    """Snapshots only ever play live players; inherited rows make their Nash mean
    something: here each main snapshot beat the one before it."""
    from league.core.nash import nash_weights

    table = PayoffTable(decay=1.0)
    snapshots = []
    for version in range(4):
        for older in snapshots:
            for _ in range(5):
                table.add_result("main_0", older, 1.0)
        sid = f"main_0@{version}"
        table.inherit(sid, "main_0")
        snapshots.append(sid)
    assert nash_weights(table, snapshots) == pytest.approx({"main_0@3": 1.0})


def test_league_snapshot_takes_its_players_payoff_row():
    from league.core.config import LeagueConfig
    from league.core.league import League

    league = League(LeagueConfig(payoff_decay=1.0))
    old = league.take_snapshot("main_0", 0)
    league.payoff.add_result("main_0", old, 1.0)
    new = league.take_snapshot("main_0", 1)
    assert league.payoff.wdl(new, old) == (1, 0, 0)
