"""Config, ids, roles (opponent choice, snapshot gate, resets) and League state."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from league.core.config import LeagueConfig
from league.core.ids import (
    ModuleId,
    is_player_id,
    is_snapshot_id,
    parse_module_id,
    player_id,
    snapshot_id,
)
from league.core.league import League
from league.core.match import MatchRecord
from league.core.matchmaking import build_plan
from league.core.model import Reset
from league.core.roles import LeagueExploiter, MainAgent, MainExploiter, Role, make_role

_counter = iter(range(10**9))


def results(a: str, b: str, wins: int = 0, draws: int = 0, losses: int = 0) -> list[MatchRecord]:
    out = []
    for result, n in (("win", wins), ("draw", draws), ("loss", losses)):
        other = {"win": "loss", "loss": "win", "draw": "draw"}[result]
        for _ in range(n):
            out.append(
                MatchRecord(
                    f"ep-{next(_counter)}", {"p0": a, "p1": b}, {"p0": result, "p1": other}, 9, 0
                )
            )
    return out


def small_cfg(**overrides) -> LeagueConfig:
    base = {"payoff_min_games": 0.0, "snapshot_min_games": 10.0, "snapshot_step_budget": 1000}
    return LeagueConfig(**{**base, **overrides})


# ---- config -------------------------------------------------------------------


def test_config_defaults_and_help_texts() -> None:
    cfg = LeagueConfig()
    assert (cfg.num_main_agents, cfg.num_main_exploiters, cfg.num_league_exploiters) == (1, 1, 1)
    assert (cfg.main_self_play_prob, cfg.main_pfsp_prob, cfg.main_forgotten_prob) == (
        0.35,
        0.5,
        0.15,
    )
    assert cfg.payoff_decay == 0.99
    assert (cfg.pfsp_weighting, cfg.pfsp_p) == ("hard", 2.0)
    assert cfg.snapshot_win_rate == 0.7
    assert cfg.snapshot_confidence == 0.95
    assert cfg.snapshot_z == pytest.approx(1.96, abs=1e-3)
    assert LeagueConfig(snapshot_confidence=0.0).snapshot_z == 0.0
    assert cfg.league_exploiter_reset_prob == 0.25
    for f in dataclasses.fields(LeagueConfig):
        assert f.metadata["help"], f.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.num_main_agents = 2  # type: ignore[misc]


def test_config_dict_round_trip() -> None:
    cfg = LeagueConfig(num_main_agents=2, pfsp_weighting="var", elo_k=8.0)
    assert LeagueConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="unknown LeagueConfig fields"):
        LeagueConfig.from_dict({"num_main_agent": 2})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_main_agents", 0),
        ("num_main_exploiters", -1),
        ("num_league_exploiters", 1.5),
        ("num_main_agents", True),
        ("main_self_play_prob", 0.5),
        ("main_pfsp_prob", -0.1),
        ("main_exploiter_switch_win_rate", 1.2),
        ("main_exploiter_weighting", "nope"),
        ("main_exploiter_reset_to", "random"),
        ("main_adopts_exploiter_win_rate", 1.5),
        ("main_adopts_exploiter_win_rate", float("inf")),
        ("league_exploiter_reset_prob", 2.0),
        ("snapshot_win_rate", float("nan")),
        ("snapshot_confidence", 1.0),
        ("snapshot_confidence", -0.05),
        ("snapshot_confidence", float("nan")),
        ("snapshot_min_games", -1.0),
        ("snapshot_step_budget", 0),
        ("payoff_decay", 0.0),
        ("payoff_decay", 1.01),
        ("payoff_min_games", -2.0),
        ("pfsp_weighting", "squared"),
        ("pfsp_p", 0.0),
        ("max_snapshots", 0),
        ("active_set_size", -1),
        ("active_set_hysteresis", -0.5),
        ("elo_k", 0.0),
        ("elo_scale", "400"),
        ("cross_side_outcome", "rank"),
    ],
)
def test_config_rejects_bad_values_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        LeagueConfig(**{field: value})


# ---- ids ----------------------------------------------------------------------


def test_ids_build_and_parse() -> None:
    assert LeagueConfig().player_ids() == ("main_0", "main_exploiter_0", "league_exploiter_0")
    assert LeagueConfig(num_main_agents=2).player_ids("main") == ("main_0", "main_1")
    assert player_id("main_exploiter", 3) == "main_exploiter_3"
    assert snapshot_id("main_0", 12) == "main_0@12"
    assert parse_module_id("main_0@12") == ModuleId("main", 0, 12)
    assert parse_module_id("league_exploiter_10") == ModuleId("league_exploiter", 10)
    assert parse_module_id("main_exploiter_2@0").player == "main_exploiter_2"
    assert str(parse_module_id("main_exploiter_2@7")) == "main_exploiter_2@7"
    assert is_snapshot_id("main_0@1") and not is_snapshot_id("main_0")
    assert is_player_id("main_0") and not is_player_id("main_0@1")


@pytest.mark.parametrize(
    "bad",
    ["shared_vf", "world_model", "main", "main_01", "main_0@", "main_0@x", "coach_0", "main_0@1@2"],
)
def test_bad_ids_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_module_id(bad)
    assert not is_snapshot_id(bad) and not is_player_id(bad)


def test_id_builders_validate() -> None:
    with pytest.raises(ValueError):
        player_id("coach", 0)
    with pytest.raises(ValueError):
        player_id("main", -1)
    with pytest.raises(ValueError):
        snapshot_id("main_0@1", 2)
    with pytest.raises(ValueError):
        snapshot_id("main_0", -1)


# ---- opponent distributions -----------------------------------------------------


def test_main_self_plays_when_there_are_no_snapshots() -> None:
    league = League(small_cfg())
    assert MainAgent("main_0", league.cfg).opponent_distribution(league.view()) == {"main_0": 1.0}
    two = League(small_cfg(num_main_agents=2))
    dist = two.role("main_1").opponent_distribution(two.view())
    assert dist == {"main_0": 0.5, "main_1": 0.5}


def test_main_branch_masses_are_35_50_15() -> None:
    """main_0@0 is beaten (not forgotten) and gets all the PFSP-over-all mass,
    since main_exploiter_0@0 is beaten 100% (hard weight 0); the forgotten
    branch then has only main_exploiter_0@0. The branches are disjoint."""
    league = League(small_cfg())
    league.take_snapshot("main_0", 0)
    league.take_snapshot("main_exploiter_0", 0)
    league.record(
        results("main_0", "main_0@0", wins=9, losses=1)
        + results("main_0", "main_exploiter_0@0", wins=10)
    )
    dist = league.role("main_0").opponent_distribution(league.view())
    assert dist == pytest.approx({"main_0": 0.35, "main_0@0": 0.50, "main_exploiter_0@0": 0.15})


def test_main_forgotten_branch_falls_back_to_self_play() -> None:
    league = League(small_cfg())
    league.take_snapshot("main_0", 0)
    league.record(results("main_0", "main_0@0", wins=9, losses=1))
    dist = league.role("main_0").opponent_distribution(league.view())
    assert dist == pytest.approx({"main_0": 0.5, "main_0@0": 0.5})


def test_main_pfsp_prefers_what_it_loses_to() -> None:
    league = League(small_cfg())
    for it in range(3):
        league.take_snapshot("main_0", it)
    league.record(
        results("main_0", "main_0@0", wins=9, losses=1)
        + results("main_0", "main_0@1", wins=5, losses=5)
        + results("main_0", "main_0@2", wins=2, losses=8)
    )
    dist = league.role("main_0").opponent_distribution(league.view())
    assert dist["main_0@2"] > dist["main_0@1"] > dist["main_0@0"]
    assert dist["main_0"] == pytest.approx(0.35)
    assert sum(dist.values()) == pytest.approx(1.0)


def fresh_role(player: str, cls: type[Role]) -> tuple[League, Role]:
    """``player``'s role in a league without snapshots, where it can only play the main."""
    league = League(small_cfg())
    role = league.role(player)
    assert isinstance(role, cls)
    assert role.opponent_distribution(league.view()) == {"main_0": 1.0}
    return league, role


def test_main_exploiter_curriculum() -> None:
    league, me = fresh_role("main_exploiter_0", MainExploiter)
    league.take_snapshot("main_0", 0)
    league.take_snapshot("main_0", 1)
    # Unknown win rate vs main (0.5 prior >= 0.2): half current main, half snapshots.
    dist = me.opponent_distribution(league.view())
    assert dist == pytest.approx({"main_0": 0.5, "main_0@0": 0.25, "main_0@1": 0.25})
    # Losing badly to the current main: only its snapshots, var-weighted.
    league.record(
        results("main_exploiter_0", "main_0", wins=1, losses=9)
        + results("main_exploiter_0", "main_0@0", wins=5, losses=5)
        + results("main_exploiter_0", "main_0@1", wins=1, losses=9)
    )
    dist = me.opponent_distribution(league.view())
    assert "main_0" not in dist
    assert dist == pytest.approx({"main_0@0": 0.25 / 0.34, "main_0@1": 0.09 / 0.34})


def test_league_exploiter_pfsp_over_all_snapshots() -> None:
    league, le = fresh_role("league_exploiter_0", LeagueExploiter)
    league.take_snapshot("main_0", 0)
    league.take_snapshot("main_exploiter_0", 0)
    league.record(results("league_exploiter_0", "main_0@0", wins=5, losses=5))
    dist = le.opponent_distribution(league.view())
    assert dist == pytest.approx({"main_0@0": 0.25 / 0.5, "main_exploiter_0@0": 0.25 / 0.5})


def test_gate_needs_win_rate_and_min_games() -> None:
    league = League(small_cfg())
    league.take_snapshot("main_0", 0)
    main = league.role("main_0")
    league.record(results("main_0", "main_0@0", wins=9))  # 9 games < 10
    assert not main.snapshot_due(league.view())
    league.record(results("main_0", "main_0@0", wins=2))  # 8.91 + 2 games, all wins
    assert main.snapshot_due(league.view())


def test_gate_shut_below_win_rate() -> None:
    league = League(small_cfg())
    league.take_snapshot("main_0", 0)
    league.record(results("main_0", "main_0@0", wins=6, draws=1, losses=5))
    assert not league.role("main_0").snapshot_due(league.view())
    league.record(results("main_0", "main_0@0", wins=30))
    assert league.role("main_0").snapshot_due(league.view())


def test_gate_needs_every_target() -> None:
    league = League(small_cfg())
    league.take_snapshot("main_0", 0)
    league.take_snapshot("league_exploiter_0", 0)
    league.record(results("main_0", "main_0@0", wins=20))
    assert not league.role("main_0").snapshot_due(league.view())
    league.record(results("main_0", "league_exploiter_0@0", wins=20))
    assert league.role("main_0").snapshot_due(league.view())


def test_gate_stays_shut_without_targets() -> None:
    league = League(small_cfg())
    assert not league.role("main_0").snapshot_due(league.view())
    assert not league.role("league_exploiter_0").snapshot_due(league.view())


def test_main_exploiter_gate_is_against_current_mains() -> None:
    league = League(small_cfg())
    league.take_snapshot("main_0", 0)
    league.record(results("main_exploiter_0", "main_0@0", wins=20))
    assert not league.role("main_exploiter_0").snapshot_due(league.view())
    league.record(results("main_exploiter_0", "main_0", wins=40, losses=6))
    assert league.role("main_exploiter_0").snapshot_due(league.view())


def test_gate_reads_a_confidence_bound_not_the_point_estimate() -> None:
    """16 wins in 20 games is 0.8 but its 95% Wilson lower end is 0.58: a lucky
    streak that small does not snapshot a player; 40 in 46 (lower end 0.74) does."""
    sure, point = League(small_cfg()), League(small_cfg(snapshot_confidence=0.0))
    for league in (sure, point):
        league.take_snapshot("main_0", 0)
        league.record(results("main_0", "main_0@0", wins=16, losses=4))
    assert sure.payoff.win_rate("main_0", "main_0@0") == pytest.approx(0.8)
    assert not sure.role("main_0").snapshot_due(sure.view())
    assert point.role("main_0").snapshot_due(point.view())
    sure.record(results("main_0", "main_0@0", wins=24, losses=2))
    assert sure.role("main_0").snapshot_due(sure.view())


def test_step_budget_opens_the_gate() -> None:
    league = League(small_cfg(snapshot_step_budget=1000))
    league.add_steps({"main_0": 999})
    assert not league.role("main_0").snapshot_due(league.view())
    league.add_steps({"main_0": 1})
    assert league.role("main_0").snapshot_due(league.view())
    league.take_snapshot("main_0", 0)
    assert league.players["main_0"].last_snapshot_step == 1000
    assert not league.role("main_0").snapshot_due(league.view())
    with pytest.raises(ValueError):
        league.add_steps({"main_0": -1})
    with pytest.raises(KeyError):
        league.add_steps({"main_9": 1})


def test_min_steps_delays_the_win_rate_gate() -> None:
    league = League(small_cfg(snapshot_min_steps=500))
    league.take_snapshot("main_0", 0)
    league.record(results("main_0", "main_0@0", wins=20))
    assert not league.role("main_0").snapshot_due(league.view())
    league.add_steps({"main_0": 500})
    assert league.role("main_0").snapshot_due(league.view())


# ---- resets -------------------------------------------------------------------


def test_main_exploiter_always_resets() -> None:
    league = League(small_cfg())
    rng = np.random.default_rng(0)
    role = league.role("main_exploiter_0")
    assert all(
        role.reset_after_snapshot(league.view(), rng) == Reset("main_exploiter_0", None)
        for _ in range(100)
    )
    two = League(small_cfg(num_main_agents=2, main_exploiter_reset_to="main"))
    two.record(results("main_1", "main_exploiter_0", wins=3))
    reset = two.role("main_exploiter_0").reset_after_snapshot(two.view(), rng)
    assert reset == Reset("main_exploiter_0", "main_1")


def adopting_league(win_rate: float | None, wins: int, losses: int) -> League:
    """A league whose main exploiter is due a snapshot, with its record against the main."""
    league = League(
        small_cfg(
            num_league_exploiters=0,
            main_exploiter_reset_to="main",
            main_adopts_exploiter_win_rate=win_rate,
        )
    )
    league.record(results("main_exploiter_0", "main_0", wins=wins, losses=losses))
    league.add_steps({"main_exploiter_0": 1000})  # the step budget: a snapshot is due
    return league


def test_a_main_adopts_an_exploiter_that_beats_it() -> None:
    rng = np.random.default_rng(0)
    league = adopting_league(0.55, wins=40, losses=10)  # 0.8 over 50 games, surely > 0.55
    decision = league.decide(rng)
    assert decision.snapshots == ("main_exploiter_0",)
    # The main restarts from the exploiter; the exploiter, now the main's copy, carries on.
    assert decision.resets == (Reset("main_0", "main_exploiter_0"),)
    exploiter_rating = league.ratings.rating("main_exploiter_0")
    league.apply(decision, iteration=1)
    assert league.ratings.rating("main_0") == exploiter_rating
    assert league.players["main_0"].parent == "main_exploiter_0"
    assert league.payoff.games("main_exploiter_0", "main_0") == 0  # old weights' record gone


@pytest.mark.parametrize(
    ("win_rate", "wins", "losses"),
    # off; not better; too few games (10); better by the point estimate only (0.6 over 20)
    [(None, 20, 0), (0.55, 10, 10), (0.55, 6, 2), (0.55, 12, 8)],
)
def test_a_main_keeps_its_weights_otherwise(win_rate, wins, losses) -> None:
    decision = adopting_league(win_rate, wins, losses).decide(np.random.default_rng(0))
    assert decision.resets == (Reset("main_exploiter_0", "main_0"),)


def test_main_never_resets() -> None:
    league = League(small_cfg())
    rng = np.random.default_rng(0)
    assert all(
        league.role("main_0").reset_after_snapshot(league.view(), rng) is None for _ in range(100)
    )


def test_league_exploiter_resets_a_quarter_of_the_time() -> None:
    league = League(small_cfg())
    rng = np.random.default_rng(1234)
    role = league.role("league_exploiter_0")
    n = 8000
    resets = sum(role.reset_after_snapshot(league.view(), rng) is not None for _ in range(n))
    assert abs(resets / n - 0.25) < 0.02  # ~5 sigma


def test_decide_and_apply() -> None:
    cfg = small_cfg(snapshot_step_budget=100, league_exploiter_reset_prob=1.0)
    league = League(cfg)
    league.add_steps({"main_0": 100, "main_exploiter_0": 100, "league_exploiter_0": 50})
    league.record(results("main_exploiter_0", "main_0", wins=3))
    decision = league.decide(np.random.default_rng(0))
    assert decision.snapshots == ("main_0", "main_exploiter_0")
    assert decision.resets == (Reset("main_exploiter_0", None),)
    assert league.snapshots == {}  # decide changes nothing
    new = league.apply(decision, iteration=5)
    assert new == ("main_0@0", "main_exploiter_0@0")
    snap = league.snapshots["main_exploiter_0@0"]
    assert (snap.player, snap.version, snap.role, snap.step, snap.iteration) == (
        "main_exploiter_0",
        0,
        "main_exploiter",
        100,
        5,
    )
    exploiter = league.players["main_exploiter_0"]
    assert exploiter.parent is None and exploiter.resets == 1
    assert exploiter.latest_snapshot == "main_exploiter_0@0"
    assert league.payoff.games("main_exploiter_0", "main_0") == 0.0
    assert league.players["main_0"].parent == "main_0@0"
    league.add_steps({"main_0": 100})
    assert league.apply(league.decide(np.random.default_rng(0)), 6) == ("main_0@1",)
    assert league.snapshots["main_0@1"].parent == "main_0@0"


def test_make_role_and_unknown_players() -> None:
    cfg = LeagueConfig()
    assert isinstance(make_role("main_0", cfg), MainAgent)
    assert isinstance(make_role("league_exploiter_3", cfg), LeagueExploiter)
    with pytest.raises(ValueError):
        make_role("main_0@1", cfg)
    league = League(cfg)
    with pytest.raises(KeyError):
        league.role("main_5")
    with pytest.raises(KeyError):
        league.take_snapshot("main_5", 0)
    with pytest.raises(KeyError):
        league.reset_player("main_exploiter_0", source="main_0@9")


# ---- whole-league state -------------------------------------------------------


def grow(league: League, seed: int, iterations: int) -> None:
    """Drive a league through iterations with random results."""
    rng = np.random.default_rng(seed)
    for it in range(iterations):
        league.add_steps({p: int(rng.integers(0, 400)) for p in league.players})
        plan = build_plan(league, list(league.snapshots)[-league.cfg.active_set_size :])
        matches = []
        for k in range(30):
            seats = plan.assign_seats(["p0", "p1"], rng)
            first = ("win", "draw", "loss")[int(rng.integers(3))]
            second = {"win": "loss", "loss": "win", "draw": "draw"}[first]
            matches.append(
                MatchRecord(f"{seed}-{it}-{k}", seats, {"p0": first, "p1": second}, 9, it)
            )
        league.record(matches)
        league.apply(league.decide(rng), it)


def test_state_round_trip_is_json_and_replays_identically() -> None:
    cfg = small_cfg(snapshot_step_budget=600, snapshot_min_games=3.0, active_set_size=4)
    league = League(cfg)
    grow(league, seed=5, iterations=12)
    assert len(league.snapshots) >= 3
    state = json.loads(json.dumps(league.get_state()))
    copy = League.from_state(cfg, state)
    assert copy.get_state() == league.get_state()
    assert copy.players == league.players
    assert copy.snapshots == league.snapshots
    grow(league, seed=9, iterations=5)
    grow(copy, seed=9, iterations=5)
    assert copy.get_state() == league.get_state()


def test_set_state_adds_players_the_config_grew_and_rejects_bad_state() -> None:
    league = League(small_cfg())
    league.take_snapshot("main_0", 0)
    state = league.get_state()
    bigger = League.from_state(small_cfg(num_main_agents=2), state)
    assert set(bigger.players) == {*league.players, "main_1"}
    assert "main_0@0" in bigger.snapshots
    with pytest.raises(ValueError):
        League.from_state(small_cfg(), {**state, "format": 99})
    bad = json.loads(json.dumps(state))
    bad["snapshots"][0]["id"] = "main_0@7"
    with pytest.raises(ValueError):
        League.from_state(small_cfg(), bad)


def test_main_plays_the_live_main_exploiter_with_its_share():
    league = League(
        LeagueConfig(
            main_self_play_prob=0.2,
            main_pfsp_prob=0.4,
            main_forgotten_prob=0.1,
            main_exploiter_prob=0.3,
            payoff_min_games=0.0,
        )
    )
    league.take_snapshot("main_0", 0)
    dist = MainAgent("main_0", league.cfg).opponent_distribution(league.view())
    assert dist["main_exploiter_0"] == pytest.approx(0.3)
    # main_0@0 is every snapshot (PFSP) and, unbeaten yet, a forgotten one
    assert dist["main_0@0"] == pytest.approx(0.4 + 0.1)
    assert dist["main_0"] == pytest.approx(0.2)
    # without main exploiters the share is self-play
    solo = League(dataclasses.replace(league.cfg, num_main_exploiters=0))
    solo_dist = MainAgent("main_0", solo.cfg).opponent_distribution(solo.view())
    assert solo_dist == pytest.approx({"main_0": 1.0})


def test_nash_opponent_sampling_plays_the_support_of_the_league_mixture():
    league = League(LeagueConfig(opponent_sampling="nash", payoff_min_games=0.0))
    for version in range(3):
        league.take_snapshot("main_0", version)
    strong, weak, mid = "main_0@0", "main_0@1", "main_0@2"
    matches = []
    for a, b in ((strong, weak), (strong, mid), (mid, weak), (strong, "main_0")):
        matches += [
            MatchRecord(f"{a}-{b}-{i}", {"p0": a, "p1": b}, {"p0": "win", "p1": "loss"}, 9, 0)
            for i in range(10)
        ]
    league.record(matches)
    assert league.view().nash == pytest.approx({strong: 1.0})
    dist = MainAgent("main_0", league.cfg).opponent_distribution(league.view())
    snapshots = {m: p for m, p in dist.items() if m.startswith("main_0@")}
    # the PFSP share (and the forgotten share, all main snapshots) goes to the support
    assert set(snapshots) == {strong}
    assert snapshots[strong] == pytest.approx(
        league.cfg.main_pfsp_prob + league.cfg.main_forgotten_prob
    )
