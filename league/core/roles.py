"""League roles and the league state they act on.

Roles follow AlphaStar (and DI-engine's league): each is a small stateless
class that, given a read-only ``LeagueView`` (players, snapshots, payoff),
says whom its player should play, whether it has earned a snapshot and whether
it restarts afterwards. All mutable state lives in ``League``; roles are pure
functions of the view (plus an explicit ``np.random.Generator``), which is
what makes matchmaking testable without Ray.

- ``MainAgent``: the product. Mixes self-play against the current mains, PFSP
  over every snapshot, and PFSP over the snapshots it risks forgetting (main
  snapshots it no longer beats well) plus past main exploiters. Never resets.
- ``MainExploiter``: finds weaknesses of the current mains. Plays a current
  main, or -- when it cannot beat it yet, and half of the time anyway -- that
  main's snapshots as a curriculum. Resets after every snapshot, so each
  lineage is a fresh attempt.
- ``LeagueExploiter``: finds weaknesses of the whole league by PFSP over all
  snapshots. Resets sometimes, to diversify without losing all progress.

Typical coordinator iteration::

    league.add_steps(steps_per_player)
    league.record(matches)                     # once per iteration
    decision = league.decide(rng)
    new_ids = league.apply(decision, iteration)  # then export/reset weights
    league.retire(retirement.retirements(league))
    active = matchmaking.choose_active_set(league, rng, active)
    plan = matchmaking.build_plan(league, active, iteration=iteration)

A fresh league has no snapshots, so mains only self-play and no win-rate gate
can open until the step budget; a coordinator that wants PFSP from the start
takes a snapshot of each main at iteration 0 (``take_snapshot``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from league.core.config import LeagueConfig
from league.core.ids import LEAGUE_EXPLOITER, MAIN, MAIN_EXPLOITER, parse_module_id
from league.core.model import LeagueView, Reset
from league.core.pfsp import pfsp_probabilities


def _add_pfsp(
    dist: dict[str, float],
    view: LeagueView,
    player: str,
    candidates: list[str],
    mass: float,
    weighting: str,
) -> None:
    probs = pfsp_probabilities(view.win_rates(player, candidates), weighting, view.cfg.pfsp_p)
    for candidate, p in zip(candidates, probs, strict=True):
        dist[candidate] = dist.get(candidate, 0.0) + mass * float(p)


def _add_uniform(dist: dict[str, float], candidates: list[str], mass: float) -> None:
    for candidate in candidates:
        dist[candidate] = dist.get(candidate, 0.0) + mass / len(candidates)


class Role:
    """Base role: snapshot gate shared by all roles; no reset."""

    name: ClassVar[str]

    def __init__(self, player: str, cfg: LeagueConfig) -> None:
        self.player = player
        self.cfg = cfg

    def opponent_distribution(self, view: LeagueView) -> dict[str, float]:
        """Opponent module id -> probability (positive, summing to 1)."""
        raise NotImplementedError

    def choose_opponent(self, view: LeagueView, rng: np.random.Generator) -> str:
        dist = self.opponent_distribution(view)
        ids = list(dist)
        return ids[int(rng.choice(len(ids), p=np.array(list(dist.values()))))]

    def targets(self, view: LeagueView) -> list[str]:
        """The opponents this role is judged against by the snapshot gate."""
        raise NotImplementedError

    def snapshot_due(self, view: LeagueView) -> bool:
        """Win-rate gate (every target beaten at ``snapshot_win_rate`` with
        ``snapshot_min_games`` games each) or the step budget.

        Without targets the gate stays shut: "beats everyone" over no one is
        no evidence of progress; the step budget still applies.
        """
        cfg = self.cfg
        player = view.players[self.player]
        since = player.steps - player.last_snapshot_step
        if since >= cfg.snapshot_step_budget:
            return True
        if since < cfg.snapshot_min_steps:
            return False
        targets = self.targets(view)
        return bool(targets) and all(
            view.payoff.games(self.player, t) >= cfg.snapshot_min_games
            and view.payoff.win_rate(self.player, t) >= cfg.snapshot_win_rate
            for t in targets
        )

    def reset_after_snapshot(self, view: LeagueView, rng: np.random.Generator) -> Reset | None:
        return None


class MainAgent(Role):
    name = MAIN

    def opponent_distribution(self, view: LeagueView) -> dict[str, float]:
        cfg = self.cfg
        dist: dict[str, float] = {}
        self_play = cfg.main_self_play_prob
        everyone = view.snapshot_ids()
        if everyone:
            _add_pfsp(dist, view, self.player, everyone, cfg.main_pfsp_prob, cfg.pfsp_weighting)
        else:
            self_play += cfg.main_pfsp_prob
        mains = view.snapshot_ids(role=MAIN)
        rates = view.win_rates(self.player, mains)
        forgotten = [
            s for s, x in zip(mains, rates, strict=True) if x < cfg.main_forgotten_win_rate
        ]
        forgotten += view.snapshot_ids(role=MAIN_EXPLOITER)
        if forgotten:
            _add_pfsp(
                dist, view, self.player, forgotten, cfg.main_forgotten_prob, cfg.pfsp_weighting
            )
        else:
            self_play += cfg.main_forgotten_prob
        _add_uniform(dist, view.player_ids(MAIN), self_play)
        return {m: p for m, p in dist.items() if p > 0.0}

    def targets(self, view: LeagueView) -> list[str]:
        return view.snapshot_ids()


class MainExploiter(Role):
    name = MAIN_EXPLOITER

    def opponent_distribution(self, view: LeagueView) -> dict[str, float]:
        cfg = self.cfg
        dist: dict[str, float] = {}
        mains = view.player_ids(MAIN)
        for main in mains:
            share = 1.0 / len(mains)
            history = view.snapshot_ids(role=MAIN, player=main)
            if not history:
                _add_uniform(dist, [main], share)
                continue
            losing = view.payoff.win_rate(self.player, main) < cfg.main_exploiter_switch_win_rate
            q = 1.0 if losing else cfg.main_exploiter_pfsp_prob
            _add_uniform(dist, [main], share * (1.0 - q))
            _add_pfsp(dist, view, self.player, history, share * q, cfg.main_exploiter_weighting)
        return {m: p for m, p in dist.items() if p > 0.0}

    def targets(self, view: LeagueView) -> list[str]:
        return view.player_ids(MAIN)

    def reset_after_snapshot(self, view: LeagueView, rng: np.random.Generator) -> Reset | None:
        """Always: each lineage is a fresh search for a new exploit."""
        if self.cfg.main_exploiter_reset_to == "initial":
            return Reset(self.player, None)
        best = max(view.player_ids(MAIN), key=lambda m: (view.ratings.get(m, 0.0), m))
        return Reset(self.player, best)


class LeagueExploiter(Role):
    name = LEAGUE_EXPLOITER

    def opponent_distribution(self, view: LeagueView) -> dict[str, float]:
        dist: dict[str, float] = {}
        everyone = view.snapshot_ids()
        if everyone:
            _add_pfsp(dist, view, self.player, everyone, 1.0, self.cfg.pfsp_weighting)
        else:
            _add_uniform(dist, view.player_ids(MAIN), 1.0)
        return {m: p for m, p in dist.items() if p > 0.0}

    def targets(self, view: LeagueView) -> list[str]:
        return view.snapshot_ids()

    def reset_after_snapshot(self, view: LeagueView, rng: np.random.Generator) -> Reset | None:
        """Sometimes: resets diversify the league, keeping some lineages long."""
        if rng.random() < self.cfg.league_exploiter_reset_prob:
            return Reset(self.player, None)
        return None


ROLES: dict[str, type[Role]] = {
    cls.name: cls for cls in (MainAgent, MainExploiter, LeagueExploiter)
}


def make_role(player: str, cfg: LeagueConfig) -> Role:
    """The role object for trainable ``player`` (e.g. ``main_exploiter_0``)."""
    parsed = parse_module_id(player)
    if parsed.is_snapshot:
        raise ValueError(f"snapshots have no role behaviour: {player!r}")
    return ROLES[parsed.role](player, cfg)
