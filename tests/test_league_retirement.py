"""Retirement: lowest rating first (from the fullest side when there are several),
never a trainable player, never a latest snapshot of a main (nor of any player)."""

from __future__ import annotations

import numpy as np
import pytest

from league.core.config import LeagueConfig
from league.core.league import League
from league.core.match import MatchRecord
from league.core.model import Snapshot
from league.core.retirement import protected_snapshots, retirements, select_retirements


def snap(sid: str, rating: float, iteration: int = 0) -> Snapshot:
    player, _, version = sid.partition("@")
    return Snapshot(
        id=sid,
        player=player,
        version=int(version or 0),
        role="main",
        parent=None,
        step=0,
        iteration=iteration,
        rating=rating,
    )


def test_nothing_to_retire_within_budget() -> None:
    snaps = [snap("main_0@0", 900), snap("main_0@1", 1000)]
    assert select_retirements(snaps, budget=2) == ()
    assert select_retirements(snaps, budget=5) == ()


def test_lowest_rating_goes_first_with_age_as_tiebreak() -> None:
    snaps = [
        snap("main_0@0", 1000, iteration=0),
        snap("main_0@1", 950, iteration=1),
        snap("main_0@2", 980, iteration=2),
        snap("main_0@3", 950, iteration=3),
        snap("main_0@4", 1100, iteration=4),
    ]
    assert select_retirements(snaps, budget=3) == ("main_0@1", "main_0@3")
    assert select_retirements(snaps, budget=2) == ("main_0@1", "main_0@3", "main_0@2")


def test_protected_and_trainable_are_never_retired() -> None:
    snaps = [snap("main_0", 0.0), snap("main_0@0", 500), snap("main_0@1", 900), snap("x@1", 1)]
    chosen = select_retirements(snaps, budget=1, protected={"main_0@0"})
    assert chosen == ("main_0@1",)
    assert select_retirements(snaps, budget=0, protected={"main_0@0", "main_0@1"}) == ()
    with pytest.raises(ValueError):
        select_retirements(snaps, budget=-1)


def test_sides_are_retired_from_the_fullest_and_rated_within_themselves() -> None:
    # simple_tag-like: every predator outrates every prey, so a league-wide
    # "lowest first" would retire prey only.
    predators = [snap(f"adversary.main_0@{v}", 30.0 + v, iteration=v) for v in range(6)]
    prey = [snap(f"agent.main_0@{v}", 10.0 + v, iteration=v) for v in range(3)]
    chosen = select_retirements(predators + prey, budget=6)
    assert chosen == ("adversary.main_0@0", "adversary.main_0@1", "adversary.main_0@2")
    # Past the point of balance the two sides take turns (a tie: the side named last).
    chosen = select_retirements(predators + prey, budget=4)
    assert chosen[:4] == (*(s.id for s in predators[:3]), "agent.main_0@0")
    kept = {s.id for s in predators + prey} - set(chosen)
    assert sorted(kept) == ["adversary.main_0@4", "adversary.main_0@5"] + [
        "agent.main_0@1",
        "agent.main_0@2",
    ]
    # A side whose snapshots are all protected is skipped, not over-retired.
    protected = {s.id for s in prey}
    chosen = select_retirements(predators[:2] + prey, budget=3, protected=protected)
    assert chosen == ("adversary.main_0@0", "adversary.main_0@1")


def record(a: str, b: str, result: str, k: int) -> MatchRecord:
    other = {"win": "loss", "loss": "win", "draw": "draw"}[result]
    return MatchRecord(f"ep-{k}", {"p0": a, "p1": b}, {"p0": result, "p1": other}, 3, 0)


@pytest.mark.parametrize("seed", range(10))
def test_latest_main_snapshot_survives_even_when_weakest(seed: int) -> None:
    league = League(LeagueConfig(max_snapshots=3, num_main_agents=2))
    rng = np.random.default_rng(seed)
    players = list(league.players)
    for it in range(12):
        league.take_snapshot(players[int(rng.integers(len(players)))], it)
    # The latest snapshot of main_0 loses every game: lowest rating.
    latest = league.take_snapshot("main_0", 12)
    others = [s for s in league.snapshots if s != latest]
    league.record(record(str(o), latest, "win", k) for k, o in enumerate(others * 3))
    assert min(league.snapshots.values(), key=lambda s: s.rating).id == latest
    chosen = retirements(league)
    assert latest not in chosen
    assert not set(chosen) & set(league.players)
    assert not set(chosen) & protected_snapshots(league)
    league.retire(chosen)
    remaining = set(league.snapshots)
    assert len(remaining) == max(3, len(protected_snapshots(league)))
    assert set(league.latest_snapshots(role="main").values()) <= remaining


def test_league_retire_cleans_up_and_refuses_protected() -> None:
    league = League(LeagueConfig(payoff_min_games=0.0))
    old = league.take_snapshot("main_0", 0)
    new = league.take_snapshot("main_0", 1)
    league.record([record("main_exploiter_0", old, "win", 0)])
    assert league.payoff.games("main_exploiter_0", old) == 1.0
    with pytest.raises(ValueError, match="latest"):
        league.retire([new])
    with pytest.raises(ValueError, match="not a snapshot"):
        league.retire(["main_0"])
    league.retire([old])
    assert old not in league.snapshots and old not in league.ratings.as_dict()
    assert league.payoff.games("main_exploiter_0", old) == 0.0
    # A match against a snapshot retired while the episode ran is dropped.
    assert league.record([record("main_exploiter_0", old, "win", 1)]) == 0
    assert all(old not in entry[:2] for entry in league.payoff.get_state()["entries"])
