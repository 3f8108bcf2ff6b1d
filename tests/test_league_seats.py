"""More than two seats, pure logic (no Ray): seat layouts (teams, sides), module ids
with sides, match records as rankings, skill ratings over rankings, matchmaking that
fills every seat, and meta-solvers beyond two-player zero-sum."""

from __future__ import annotations

import dataclasses
import pickle
import re
from collections import Counter

import numpy as np
import pytest

from league.core.config import LeagueConfig
from league.core.ids import parse_module_id, player_id, side_of, snapshot_id
from league.core.league import League
from league.core.match import (
    MatchRecord,
    pairwise_scores,
    ranked_within_sides,
    team_ranks,
    team_standings,
)
from league.core.matchmaking import build_plan, next_plan
from league.core.meta import check_solver, meta_weights
from league.core.payoff import PayoffTable
from league.core.ratings import SkillRatings
from league.core.seats import SeatLayout, SeatLayoutError

PREDATOR_PREY = {
    "adversary_0": "big",
    "adversary_1": "big",
    "adversary_2": "big",
    "agent_0": "small",
}
BRIDGE_SEATS = ("player_0", "player_1", "player_2", "player_3")
_episode = iter(range(10**9))


def cfg(**overrides) -> LeagueConfig:
    return LeagueConfig(**{"payoff_min_games": 0.0, **overrides})


# ---- layouts ---------------------------------------------------------------------


def test_sides_come_from_spaces_and_are_named_by_seat_stem() -> None:
    layout = SeatLayout.from_game(list(PREDATOR_PREY), PREDATOR_PREY)
    assert layout.sides == ("adversary", "agent") and layout.multi_side
    assert [t.name for t in layout.teams] == list(PREDATOR_PREY)  # every seat alone
    assert layout.opponent_sides("adversary") == ("adversary", "agent")
    assert layout.opponent_sides("agent") == ("adversary",)
    teamed = SeatLayout.from_game(
        list(PREDATOR_PREY), PREDATOR_PREY, {"predators": ["adversary_*"], "prey": ["agent_0"]}
    )
    assert [(t.name, t.side, t.seats) for t in teamed.teams] == [
        ("predators", "adversary", ("adversary_0", "adversary_1", "adversary_2")),
        ("prey", "agent", ("agent_0",)),
    ]
    assert teamed.opponent_sides("adversary") == ("agent",)
    assert teamed.slot("adversary_2") == 2 and not teamed.two_player


def test_one_side_games_keep_ids_without_a_side() -> None:
    layout = SeatLayout.from_game(BRIDGE_SEATS, dict.fromkeys(BRIDGE_SEATS, "same"))
    assert layout.sides == ("",) and not layout.multi_side
    two = SeatLayout.from_game(("a", "b"), {"a": 1, "b": 1})
    assert two.two_player and two == SeatLayout.free_for_all(("a", "b"))
    assert SeatLayout.from_dict(layout.to_dict()) == layout


@pytest.mark.parametrize(
    ("teams", "message"),
    [
        ({"ns": ["player_0", "player_9"]}, "names seat 'player_9', which the game lacks"),
        ({"ns": ["player_0", "player_2"], "ew": ["player_2"]}, "seat 'player_2' is in two teams"),
        ({"all": ["player_*"]}, "a match needs at least two teams"),
        ({"ns": "player_0"}, "must list its seats"),
    ],
)
def test_bad_teams_are_refused_in_one_line(teams, message) -> None:
    with pytest.raises(SeatLayoutError, match=message):
        SeatLayout.from_game(BRIDGE_SEATS, dict.fromkeys(BRIDGE_SEATS, "same"), teams)


def test_a_team_across_sides_is_refused() -> None:
    with pytest.raises(SeatLayoutError, match="mixes seats with different observation"):
        SeatLayout.from_game(
            list(PREDATOR_PREY), PREDATOR_PREY, {"mixed": ["adversary_0", "agent_0"]}
        )


# ---- ids ---------------------------------------------------------------------------


def test_ids_carry_the_side_only_where_there_is_one() -> None:
    assert player_id("main", 0) == "main_0"
    pid = player_id("main_exploiter", 2, "adversary")
    assert pid == "adversary.main_exploiter_2"
    sid = snapshot_id(pid, 7)
    parsed = parse_module_id(sid)
    assert (parsed.side, parsed.role, parsed.index, parsed.version) == (
        "adversary",
        "main_exploiter",
        2,
        7,
    )
    assert parsed.player == pid and side_of(sid) == "adversary" and side_of("main_0@1") == ""
    for bad in ("Adversary.main_0", ".main_0", "a.b.main_0", "adversary.main_0."):
        with pytest.raises(ValueError):
            parse_module_id(bad)
    assert LeagueConfig().player_ids(sides=("adversary", "agent"))[:3] == (
        "adversary.main_0",
        "adversary.main_exploiter_0",
        "adversary.league_exploiter_0",
    )


# ---- rankings ----------------------------------------------------------------------


def test_team_returns_rank_teams_and_ties_share_a_rank() -> None:
    teams = {"a": "x", "b": "y", "c": "x", "d": "z"}
    ranks = team_ranks({"a": 1.0, "b": 3.0, "c": 0.5, "d": 2.0}, teams)
    assert ranks == {"a": 2, "b": 0, "c": 2, "d": 1}  # team x sums to 1.5
    tied = team_ranks({"a": 1.0, "b": 3.0, "c": 1.0, "d": 2.0}, teams)
    assert tied == {"a": 1, "b": 0, "c": 1, "d": 1}  # x and z both 2.0
    assert team_ranks({"a": 1, "b": 1, "c": 0}) == {"a": 0, "b": 0, "c": 2}


def test_a_2v2_record_is_one_team_result_and_round_trips() -> None:
    record = MatchRecord.from_returns(
        "e1",
        {"n": "main_0", "s": "main_0", "e": "main_0@3", "w": "main_0@3"},
        {"n": 1.0, "s": 1.0, "e": -1.0, "w": -1.0},
        length=12,
        iteration=4,
        teams={"n": "ns", "s": "ns", "e": "ew", "w": "ew"},
    )
    assert record.outcomes == {"n": "win", "s": "win", "e": "loss", "w": "loss"}
    assert pairwise_scores(record) == [("main_0@3", "main_0", 0.0)]  # teams in seat order
    assert MatchRecord.from_dict(record.to_dict()) == record
    assert MatchRecord.from_dict(record.to_dict()).teams == record.teams
    with pytest.raises(ValueError, match="must share module and rank"):
        MatchRecord(
            "e2",
            {"n": "a", "s": "b", "e": "c"},
            dict.fromkeys("nse", "draw"),
            1,
            0,
            teams={"n": "t", "s": "t", "e": "u"},
        )


def test_old_records_read_as_every_seat_alone() -> None:
    old = {
        "episode_id": "old",
        "modules": {"p0": "main_0", "p1": "main_0@1"},
        "outcomes": {"p0": "loss", "p1": "win"},
        "length": 9,
        "iteration": 2,
    }
    record = MatchRecord.from_dict(old)
    assert record.teams == {"p0": "p0", "p1": "p1"} and record.ranks == {"p0": 1, "p1": 0}
    assert "teams" not in record.to_dict() and "ranks" not in record.to_dict()


def test_free_for_all_pairs_and_standings() -> None:
    record = MatchRecord.from_returns(
        "e3", {"a": "main_0", "b": "main_0", "c": "main_0@2"}, {"a": 2, "b": -1, "c": -1}, 5, 0
    )
    # main_0 in two seats: one win and one tie against the snapshot, never against itself.
    assert pairwise_scores(record) == [("main_0", "main_0@2", 1.0), ("main_0", "main_0@2", 0.5)]
    assert dict(team_standings(record)) == {"main_0": 0.5, "main_0@2": 1.0}


TAG_LAYOUT = SeatLayout.from_game(
    list(PREDATOR_PREY), PREDATOR_PREY, {"predators": ["adversary_*"], "prey": ["agent_0"]}
)
TAG_SIDES = {seat: TAG_LAYOUT.side_of(seat) for seat in TAG_LAYOUT.seats}


def tag_match(episode: str, predator: str, prey: str, catches: int) -> MatchRecord:
    """A simple_tag-like match: predators score 10 a catch each, the prey -10 a catch
    and -1 for running off the map, so predators outscore the prey every game."""
    returns = {seat: 10.0 * catches for seat in PREDATOR_PREY if seat != "agent_0"}
    return MatchRecord.from_returns(
        episode,
        {seat: predator if seat in returns else prey for seat in PREDATOR_PREY},
        {**returns, "agent_0": -10.0 * catches - 1},
        25,
        0,
        teams={seat: TAG_LAYOUT.team_of(seat).name for seat in PREDATOR_PREY},
    )


def test_cross_side_matches_rank_within_each_side() -> None:
    matches = [
        tag_match(f"t{i}", "adversary.main_0", "agent.main_0", catches)
        for i, catches in enumerate([1, 2, 3, 4])
    ]
    # Raw team returns: the predators win every match, however few catches they make.
    assert all(m.outcomes["adversary_0"] == "win" for m in matches)
    ranked = ranked_within_sides(matches, TAG_SIDES)
    # Within sides: few catches is a good game for the prey, many a good one for the
    # predators; the returns are kept as played.
    assert [m.outcomes["agent_0"] for m in ranked] == ["win", "win", "loss", "loss"]
    assert [m.outcomes["adversary_1"] for m in ranked] == ["loss", "loss", "win", "win"]
    assert [m.returns for m in ranked] == [m.returns for m in matches]
    assert [m.episode_id for m in ranked] == [m.episode_id for m in matches]
    # One match of a side is no scale: kept as ranked by returns.
    assert ranked_within_sides(matches[:1], TAG_SIDES) == matches[:1]
    # Every team of one side (a one-side game): nothing to re-rank.
    assert ranked_within_sides(matches, dict.fromkeys(TAG_SIDES, "")) == matches


def test_within_side_outcomes_give_pfsp_graded_win_rates() -> None:
    """With cross-side ranks by raw return the prey loses to every predator, so PFSP
    cannot tell a strong predator from a weak one; within sides it can."""
    leagues = {}
    for outcome in ("return", "within_side"):
        league = League(cfg(cross_side_outcome=outcome), TAG_LAYOUT)
        strong = league.take_snapshot("adversary.main_0", iteration=1)
        weak = league.take_snapshot("adversary.main_0", iteration=2)
        # The prey is caught 3-6 times by the strong predators, 0-2 times by the weak.
        matches = [
            tag_match(f"p{i}", strong, "agent.main_0", 3 + i % 4)
            if i % 2
            else tag_match(f"p{i}", weak, "agent.main_0", i % 3)
            for i in range(40)
        ]
        if outcome == "within_side":
            matches = ranked_within_sides(matches, TAG_SIDES)
        league.record(matches)
        leagues[outcome] = [league.payoff.win_rate("agent.main_0", s) for s in (strong, weak)]
    assert leagues["return"] == [0.0, 0.0]
    against_strong, against_weak = leagues["within_side"]
    assert against_strong < 0.5 < against_weak


# ---- skill ratings -----------------------------------------------------------------


def ranking(modules: list[str], ranks: list[int]) -> MatchRecord:
    seats = [f"s{i}" for i in range(len(modules))]
    returns = {s: -float(r) for s, r in zip(seats, ranks, strict=True)}
    return MatchRecord.from_returns(
        f"r{next(_episode)}", dict(zip(seats, modules, strict=True)), returns, 3, 0
    )


def test_skill_ratings_order_a_consistent_ranking_and_tie_evenly() -> None:
    ratings = SkillRatings()
    for _ in range(30):
        ratings.update([ranking(["a", "b", "c", "d"], [0, 1, 2, 3])])
    scores = [ratings.rating(m) for m in "abcd"]
    assert scores == sorted(scores, reverse=True) and scores[0] - scores[3] > 10
    tied = SkillRatings()
    tied.update([ranking(["x", "y", "z"], [0, 0, 1])])
    assert tied.skill("x") == pytest.approx(tied.skill("y"))
    assert tied.rating("x") > tied.rating("z")
    mu, sigma = tied.skill("x")
    assert sigma < tied.prior[1]  # a game made it surer
    copy = SkillRatings()
    copy.set_state(tied.get_state())
    assert copy.as_dict() == tied.as_dict()


def test_a_league_of_three_seats_rates_by_skill_and_restores_it() -> None:
    layout = SeatLayout.free_for_all(("p0", "p1", "p2"))
    league = League(cfg(), layout)
    assert league.rating_kind == "skill"
    league.take_snapshot("main_0", 0)
    league.record([ranking(["main_0", "main_0@0", "main_exploiter_0"], [0, 1, 2])] * 1)
    league.record([ranking(["main_0", "main_0@0", "main_exploiter_0"], [0, 1, 2])])
    ratings = league.ratings.as_dict()
    assert ratings["main_0"] > ratings["main_0@0"] > ratings["main_exploiter_0"]
    restored = League.from_state(cfg(), league.get_state(), layout)
    assert restored.ratings.as_dict() == ratings
    with pytest.raises(ValueError, match="expected 'elo'"):
        League.from_state(cfg(), league.get_state())  # a two-player league reads Elo


# ---- matchmaking -------------------------------------------------------------------


def grown(layout: SeatLayout, **overrides) -> League:
    league = League(cfg(**overrides), layout)
    for pid in list(league.players):
        league.take_snapshot(pid, 0)
        league.take_snapshot(pid, 1)
    return league


@pytest.mark.parametrize(
    "layout",
    [
        SeatLayout.free_for_all(("p0", "p1", "p2")),
        SeatLayout.from_game(
            BRIDGE_SEATS,
            dict.fromkeys(BRIDGE_SEATS, 0),
            {"ns": ["player_0", "player_2"], "ew": ["player_1", "player_3"]},
        ),
        SeatLayout.from_game(list(PREDATOR_PREY), PREDATOR_PREY),
        SeatLayout.from_game(
            list(PREDATOR_PREY), PREDATOR_PREY, {"predators": ["adversary_*"], "prey": ["agent_0"]}
        ),
    ],
    ids=["ffa3", "2v2", "sides", "sides-teams"],
)
def test_every_seat_is_filled_from_players_and_active_set(layout: SeatLayout) -> None:
    league = grown(layout, active_set_size=4)
    active, plan = next_plan(league, np.random.default_rng(0))
    plan = pickle.loads(pickle.dumps(plan))  # one picklable object per iteration
    allowed = set(league.players) | set(active)
    rng = np.random.default_rng(1)
    learners: Counter[str] = Counter()
    for _ in range(3000):
        seats = plan.assign_seats(None, rng)
        assert list(seats) == list(layout.seats)
        assert set(seats.values()) <= allowed
        for team in layout.teams:
            modules = {seats[s] for s in team.seats}
            assert len(modules) == 1  # one module plays the whole team
            (module,) = modules
            assert side_of(module) == team.side  # right spaces
        learners.update(m for m in set(seats.values()) if m in league.players)
    assert set(learners) == set(league.players)  # every role learns


def test_the_learner_takes_every_team_of_its_side() -> None:
    layout = SeatLayout.free_for_all(("p0", "p1", "p2"))
    league = League(cfg(num_main_exploiters=0, num_league_exploiters=0), layout)
    league.take_snapshot("main_0", 0)
    plan = build_plan(league, ["main_0@0"])
    rng = np.random.default_rng(3)
    seen = Counter()
    for _ in range(6000):
        seats = plan.assign_seats(None, rng)
        # A learner alone among snapshots shows where it sat.
        mains = [s for s, m in seats.items() if m == "main_0"]
        if len(mains) == 1:
            seen[mains[0]] += 1
    assert len(seen) == 3 and min(seen.values()) > 0.8 * max(seen.values())


def test_exploiters_of_the_other_side_fill_seats_with_the_mains_they_hunt() -> None:
    layout = SeatLayout.from_game(
        list(PREDATOR_PREY), PREDATOR_PREY, {"predators": ["adversary_*"], "prey": ["agent_0"]}
    )
    league = League(cfg(), layout)
    plan = build_plan(league, [])
    assert plan.opponent_distribution("agent.main_exploiter_0", "adversary") == {
        "adversary.main_0": 1.0
    }
    assert plan.opponent_distribution("adversary.main_0", "agent") == {"agent.main_0": 1.0}


def test_a_side_plays_its_own_main_mix() -> None:
    """`main_mix_by_side`: the prey main plays its exploiter-hunting mix, the
    predators keep the league-wide self-play."""
    layout = SeatLayout.from_game(
        list(PREDATOR_PREY), PREDATOR_PREY, {"predators": ["adversary_*"], "prey": ["agent_0"]}
    )
    prey_mix = {"main_self_play_prob": 0.0, "main_exploiter_prob": 1.0}
    league = League(
        cfg(
            main_self_play_prob=1.0,
            main_pfsp_prob=0.0,
            main_forgotten_prob=0.0,
            main_mix_by_side={"agent": prey_mix},
        ),
        layout,
    )
    plan = build_plan(league, [])
    assert plan.opponent_distribution("agent.main_0", "adversary") == {
        "adversary.main_exploiter_0": 1.0
    }
    assert plan.opponent_distribution("adversary.main_0", "agent") == {"agent.main_0": 1.0}
    assert league.cfg.for_side("adversary") is league.cfg
    assert league.cfg.for_side("agent").main_exploiter_prob == 1.0


@pytest.mark.parametrize(
    ("by_side", "message"),
    [
        (
            {"agent": {"main_pfsp_prob": 0.9, "main_exploiter_prob": 0.3}},
            "main_mix_by_side['agent']: the shares named sum to 1.2, more than 1",
        ),
        ({"agent": {"entropy_coeff": 0.1}}, "a side's mix takes main_self_play_prob"),
        ({"agent": {}}, "maps a side name to its main's shares"),
        (
            {"agent": {"main_pfsp_prob": -0.5, "main_self_play_prob": 1.5}},
            "main_mix_by_side['agent']: main_pfsp_prob must be >= 0.0, got -0.5",
        ),
        ({"agent": {"main_pfsp_prob": "0.3"}}, "main_pfsp_prob must be a number, got '0.3'"),
        ([("agent", {})], "must be a mapping of at most 64 side names"),
    ],
)
def test_a_bad_side_mix_is_refused_naming_it(by_side, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        cfg(main_mix_by_side=by_side)


def test_a_side_mix_fills_what_it_leaves_in_the_league_wide_proportions() -> None:
    """The shares a side leaves unnamed keep the league-wide proportions, so the side's
    mix sums to 1 whatever the league-wide mix becomes (`league tune` perturbs it)."""
    league_wide = {"main_self_play_prob": 0.6, "main_pfsp_prob": 0.1, "main_exploiter_prob": 0.3}
    config = cfg(
        **league_wide, main_forgotten_prob=0.0, main_mix_by_side={"agent": {"main_pfsp_prob": 0.3}}
    )
    prey = config.for_side("agent")
    assert prey.main_pfsp_prob == 0.3
    assert prey.main_self_play_prob == pytest.approx(0.7 * 0.6 / 0.9)
    assert prey.main_exploiter_prob == pytest.approx(0.7 * 0.3 / 0.9)
    perturbed = dataclasses.replace(
        config, main_self_play_prob=0.2, main_pfsp_prob=0.3, main_exploiter_prob=0.5
    )
    prey = perturbed.for_side("agent")
    assert prey.main_pfsp_prob == 0.3
    assert prey.main_self_play_prob == pytest.approx(0.7 * 0.2 / 0.7)
    assert prey.main_exploiter_prob == pytest.approx(0.7 * 0.5 / 0.7)
    with pytest.raises(ValueError, match="the league-wide ones they leave are all 0"):
        cfg(
            main_self_play_prob=1.0,
            main_pfsp_prob=0.0,
            main_forgotten_prob=0.0,
            main_mix_by_side={"agent": {"main_self_play_prob": 0.5}},
        )


def test_a_side_mix_must_name_a_side_of_the_game() -> None:
    layout = SeatLayout.from_game(
        list(PREDATOR_PREY), PREDATOR_PREY, {"predators": ["adversary_*"], "prey": ["agent_0"]}
    )
    with pytest.raises(ValueError, match="not a side of this game"):
        League(
            cfg(main_mix_by_side={"wolf": {"main_pfsp_prob": 0.5, "main_self_play_prob": 0.35}}),
            layout,
        )
    with pytest.raises(ValueError, match="games of several sides"):
        League(
            cfg(main_mix_by_side={"": {"main_pfsp_prob": 0.5}}),
            SeatLayout.free_for_all(("player_0", "player_1")),
        )


# ---- meta-solvers ------------------------------------------------------------------


def rps_payoff() -> PayoffTable:
    table = PayoffTable(decay=1.0)
    for a, b in (("r", "s"), ("s", "p"), ("p", "r")):
        for _ in range(10):
            table.add_result(a, b, 1.0)
    return table


def test_alpharank_and_nash_agree_on_a_cycle() -> None:
    for solver in ("nash", "alpharank"):
        weights = meta_weights(rps_payoff(), {"": ["r", "p", "s"]}, solver)
        assert weights == pytest.approx({"r": 1 / 3, "p": 1 / 3, "s": 1 / 3}, abs=1e-6)


def test_two_sides_get_a_mixture_each() -> None:
    table = PayoffTable(decay=1.0)
    for _ in range(10):
        table.add_result("a.main_0@0", "b.main_0@0", 1.0)  # a0 beats b0
        table.add_result("a.main_0@1", "b.main_0@1", 1.0)
        table.add_result("a.main_0@0", "b.main_0@1", 0.0)  # b1 beats a0
        table.add_result("a.main_0@1", "b.main_0@0", 0.0)
    sides = {"a": ["a.main_0@0", "a.main_0@1"], "b": ["b.main_0@0", "b.main_0@1"]}
    for solver in ("nash", "alpharank"):
        weights = meta_weights(table, sides, solver)
        assert sum(weights[m] for m in sides["a"]) == pytest.approx(1.0)
        assert sum(weights[m] for m in sides["b"]) == pytest.approx(1.0)
        assert weights["a.main_0@0"] == pytest.approx(0.5, abs=0.05)


def test_nash_is_refused_where_no_solver_applies() -> None:
    check_solver("nash", 2, 2)
    with pytest.raises(ValueError, match="has 3 teams"):
        check_solver("nash", 3, 1)
    with pytest.raises(ValueError, match="has 3 teams"):
        League(cfg(opponent_sampling="nash"), SeatLayout.free_for_all(("a", "b", "c")))
    league = grown(SeatLayout.free_for_all(("a", "b", "c")), opponent_sampling="alpharank")
    active, plan = next_plan(league, np.random.default_rng(0))
    assert plan.opponent_distribution("main_0")
