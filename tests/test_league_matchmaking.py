"""Matchmaking plans (statistics, active-set restriction, pickling) and the
active-set chooser (preference, bounds, stability)."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest

from league.core.config import LeagueConfig
from league.core.league import League
from league.core.match import MatchRecord
from league.core.matchmaking import (
    MatchmakingPlan,
    build_plan,
    choose_active_set,
    next_plan,
    snapshot_need,
)

N = 20_000
_counter = iter(range(10**9))


def results(a: str, b: str, wins: int = 0, losses: int = 0) -> list[MatchRecord]:
    out = []
    for result, n in (("win", wins), ("loss", losses)):
        other = "loss" if result == "win" else "win"
        out += [
            MatchRecord(
                f"ep-{next(_counter)}", {"p0": a, "p1": b}, {"p0": result, "p1": other}, 9, 0
            )
            for _ in range(n)
        ]
    return out


def cfg(**overrides) -> LeagueConfig:
    return LeagueConfig(**{"payoff_min_games": 0.0, **overrides})


def frequencies(draws: list[str]) -> dict[str, float]:
    return {k: v / len(draws) for k, v in Counter(draws).items()}


def within(observed: float, p: float, n: int = N, sigmas: float = 5.0) -> bool:
    return abs(observed - p) <= sigmas * np.sqrt(p * (1 - p) / n) + 1e-12


def test_main_mix_35_50_15_over_20k_draws() -> None:
    """Same disjoint-branch setup as the roles test, now sampled through a plan."""
    league = League(cfg())
    league.take_snapshot("main_0", 0)
    league.take_snapshot("main_exploiter_0", 0)
    league.record(
        results("main_0", "main_0@0", wins=9, losses=1)
        + results("main_0", "main_exploiter_0@0", wins=10)
    )
    plan = build_plan(league, ["main_0@0", "main_exploiter_0@0"])
    rng = np.random.default_rng(2024)
    freq = frequencies([plan.sample_opponent("main_0", rng) for _ in range(N)])
    assert set(freq) == {"main_0", "main_0@0", "main_exploiter_0@0"}
    assert within(freq["main_0"], 0.35)
    assert within(freq["main_0@0"], 0.50)
    assert within(freq["main_exploiter_0@0"], 0.15)


def test_fallback_to_self_play_without_snapshots() -> None:
    league = League(cfg())
    plan = build_plan(league, [])
    rng = np.random.default_rng(1)
    assert {plan.sample_opponent("main_0", rng) for _ in range(N)} == {"main_0"}
    assert plan.opponent_distribution("main_exploiter_0") == {"main_0": 1.0}
    assert plan.opponent_distribution("league_exploiter_0") == {"main_0": 1.0}


@pytest.mark.parametrize("share", [0.5, 0.8, 1 / 3])
def test_learners_follow_the_main_share_and_are_weightable(share: float) -> None:
    league = League(cfg(main_learner_share=share))
    rng = np.random.default_rng(3)
    freq = frequencies([build_plan(league, []).sample_learner(rng) for _ in range(3000)])
    expected = {
        "main_0": share,
        **dict.fromkeys(["main_exploiter_0", "league_exploiter_0"], (1 - share) / 2),
    }
    for player in league.players:
        assert within(freq[player], expected[player], n=3000)
    plan = build_plan(league, [], learner_weights={"main_0": 3.0, "main_exploiter_0": 1.0})
    assert plan.learner_probs == (0.75, 0.25, 0.0)
    freq = frequencies([plan.sample_learner(rng) for _ in range(N)])
    assert "league_exploiter_0" not in freq
    assert within(freq["main_0"], 0.75)
    with pytest.raises(ValueError):
        build_plan(league, [], learner_weights={"main_7": 1.0})


def test_restricted_plan_keeps_the_branch_mix() -> None:
    league = League(cfg(active_set_size=2))
    for it in range(6):
        league.take_snapshot("main_0", it)
    plan = build_plan(league, ["main_0@1", "main_0@4"])
    dist = plan.opponent_distribution("main_0")
    assert set(dist) == {"main_0", "main_0@1", "main_0@4"}
    assert dist["main_0"] == pytest.approx(0.35)
    assert dist["main_0@1"] == pytest.approx(0.325)


def big_league(seed: int, n_snapshots: int = 14) -> League:
    league = League(cfg(active_set_size=4, num_main_agents=2))
    rng = np.random.default_rng(seed)
    players = list(league.players)
    for it in range(n_snapshots):
        league.take_snapshot(players[int(rng.integers(len(players)))], it)
    mods = list(league.module_ids())
    matches = []
    for _ in range(300):
        a, b = rng.choice(mods, size=2, replace=False)
        matches += results(str(a), str(b), wins=int(rng.integers(2)), losses=1)
    league.record(matches)
    return league


@pytest.mark.parametrize("seed", range(5))
def test_plan_never_names_a_module_outside_trainable_and_active(seed: int) -> None:
    league = big_league(seed)
    rng = np.random.default_rng(seed)
    active = choose_active_set(league, rng)
    assert len(active) == 4
    plan = build_plan(league, active, iteration=seed)
    allowed = set(league.players) | set(active)
    assert plan.module_ids() == allowed
    for opponents in plan.opponents:
        assert set(opponents) <= allowed
    seen: set[str] = set()
    for _ in range(2000):
        seen |= set(plan.assign_seats(["player_0", "player_1"], rng).values())
    assert seen <= allowed
    assert seen & set(active)  # the active snapshots are actually used


def test_plan_rejects_outside_modules_and_bad_active_sets() -> None:
    with pytest.raises(ValueError, match="outside"):
        MatchmakingPlan(
            learners=("main_0",),
            learner_probs=(1.0,),
            opponents=(("main_0@3",),),
            opponent_probs=((1.0,),),
            active_set=(),
        )
    with pytest.raises(ValueError):
        MatchmakingPlan(("main_0",), (1.0,), (("main_0",),), ((0.5,),))
    with pytest.raises(ValueError):
        MatchmakingPlan(("shared_vf",), (1.0,), (("shared_vf",),), ((1.0,),))
    league = League(cfg(active_set_size=1))
    league.take_snapshot("main_0", 0)
    league.take_snapshot("main_0", 1)
    with pytest.raises(ValueError, match="active_set_size"):
        build_plan(league, ["main_0@0", "main_0@1"])
    with pytest.raises(ValueError, match="unknown"):
        build_plan(league, ["main_0@9"])


def test_plan_pickles_and_is_frozen() -> None:
    league = big_league(0)
    plan = build_plan(league, choose_active_set(league, np.random.default_rng(0)), iteration=7)
    assert pickle.loads(pickle.dumps(plan)) == plan
    with pytest.raises(AttributeError):
        plan.iteration = 8  # type: ignore[misc]


def test_learner_takes_each_seat_half_the_time() -> None:
    league = League(cfg(num_main_exploiters=0, num_league_exploiters=0))
    league.take_snapshot("main_0", 0)
    plan = build_plan(league, ["main_0@0"])
    rng = np.random.default_rng(11)
    seats = [plan.assign_seats(["a", "b"], rng) for _ in range(N)]
    first = sum(s["a"] == "main_0" and s["b"] == "main_0@0" for s in seats) / N
    second = sum(s["b"] == "main_0" and s["a"] == "main_0@0" for s in seats) / N
    assert within(first, 0.325) and within(second, 0.325)
    with pytest.raises(ValueError):
        plan.assign_seats(["a"], rng)


# ---- active set -----------------------------------------------------------------


def test_active_set_prefers_the_most_needed() -> None:
    league = big_league(1)
    need = snapshot_need(league)
    active = choose_active_set(league, np.random.default_rng(0))
    outside = set(league.snapshots) - set(active)
    assert min(need[s] for s in active) >= max(need[s] for s in outside)


def test_snapshot_need_is_the_max_over_roles() -> None:
    league = League(cfg())
    league.take_snapshot("main_0", 0)
    league.take_snapshot("main_exploiter_0", 0)
    need = snapshot_need(league)
    view = league.view()
    for sid in league.snapshots:
        probs = [league.role(p).opponent_distribution(view).get(sid, 0.0) for p in league.players]
        assert need[sid] == max(probs)
    # Main exploiter: half on main_0, half on main_0@0; league exploiter: 2 equal.
    assert need["main_0@0"] == pytest.approx(0.5)
    assert need["main_exploiter_0@0"] == pytest.approx(0.5)


def test_active_set_is_stable_and_changes_little() -> None:
    league = big_league(2)
    rng = np.random.default_rng(0)
    active = choose_active_set(league, rng)
    assert choose_active_set(league, rng, active) == active
    # Make every outsider far more needed: at most max_swaps members change.
    outsiders = [s for s in league.snapshots if s not in active]
    matches = []
    for player in league.players:
        for sid in active:
            matches += results(player, sid, wins=40)
        for sid in outsiders:
            matches += results(player, sid, losses=40)
    league.record(matches)
    again = choose_active_set(league, rng, active)
    assert len(again) == 4
    assert len(set(again) - set(active)) == league.cfg.active_set_max_swaps == 2
    kept = [i for i, s in enumerate(again) if s in active]
    assert [again[i] for i in kept] == [active[i] for i in kept]  # positions kept


def test_active_set_drops_retired_fills_slots_and_respects_k() -> None:
    league = big_league(3)
    rng = np.random.default_rng(0)
    active = choose_active_set(league, rng)
    gone = [s for s in active if s not in set(league.latest_snapshots().values())][:2]
    league.retire(gone)
    again = choose_active_set(league, rng, active)
    assert len(again) == 4 and not set(gone) & set(again)
    assert set(active) - set(gone) <= set(again)
    with pytest.raises(ValueError, match="active_set_size must be >= 1"):
        cfg(active_set_size=0)  # would quietly turn the league into self-play
    shrunk = League(cfg(active_set_size=2))
    for it in range(5):
        shrunk.take_snapshot("main_0", it)
    assert len(choose_active_set(shrunk, rng, list(shrunk.snapshots))) == 2


def test_small_need_changes_do_not_churn() -> None:
    league = League(cfg(active_set_size=2, num_main_exploiters=0, num_league_exploiters=0))
    for it in range(3):
        league.take_snapshot("main_0", it)
    rng = np.random.default_rng(0)
    active = choose_active_set(league, rng, ["main_0@0", "main_0@1"])
    assert active == ("main_0@0", "main_0@1")  # all tied: keep what is loaded
    league.record(
        results("main_0", "main_0@0", wins=20, losses=19)
        + results("main_0", "main_0@2", wins=19, losses=20)
    )
    need = snapshot_need(league)
    assert need["main_0@2"] > need["main_0@0"]  # slightly more needed, within hysteresis
    assert choose_active_set(league, rng, active) == active
    league.record(results("main_0", "main_0@2", losses=40))  # now far more needed
    assert choose_active_set(league, rng, active) == ("main_0@2", "main_0@1")


def _grown_league(seed: int) -> League:
    """A league with several snapshots of every role and uneven results."""
    rng = np.random.default_rng(seed)
    league = League(cfg(active_set_size=4))
    for iteration in range(4):
        for player in league.players:
            league.take_snapshot(player, iteration)
    modules = list(league.module_ids())
    matches = []
    for player in league.players:
        for other in rng.choice(modules, size=6, replace=False):
            if other != player:
                wins = int(rng.integers(0, 6))
                matches += results(player, str(other), wins=wins, losses=5 - wins)
    league.record(matches)
    return league


@pytest.mark.parametrize("seed", range(5))
def test_plan_from_branches_equals_roles_on_the_restricted_view(seed) -> None:
    """Restricting the full league's branches gives each learner exactly the mix
    its role would compute on a league that holds only the active set."""
    league = _grown_league(seed)
    rng = np.random.default_rng(seed)
    snapshots = list(league.snapshots)
    for _ in range(5):
        active = tuple(rng.choice(snapshots, size=int(rng.integers(0, 5)), replace=False))
        plan = build_plan(league, active)
        view = league.view(active)
        for pid in league.players:
            expected = league.role(pid).opponent_distribution(view)
            got = plan.opponent_distribution(pid)
            assert set(got) == set(expected), (pid, active)
            for module, p in expected.items():
                assert got[module] == pytest.approx(p, abs=1e-12)


def test_next_plan_computes_each_role_mix_once(monkeypatch) -> None:
    from league.core import roles

    league = _grown_league(7)
    calls = Counter()
    for cls in (roles.MainAgent, roles.MainExploiter, roles.LeagueExploiter):
        original = cls.opponent_branches

        def counted(self, view, side=None, _original=original):
            calls[self.player] += 1
            return _original(self, view, side)

        monkeypatch.setattr(cls, "opponent_branches", counted)
    active, plan = next_plan(league, np.random.default_rng(0), iteration=3)
    assert calls == Counter(dict.fromkeys(league.players, 1))
    assert len(active) == league.cfg.active_set_size and plan.active_set == active
    assert plan.iteration == 3 and plan.module_ids() == set(league.players) | set(active)
