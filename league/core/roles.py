"""League roles: whom each trainable player plays, when it snapshots, whether it resets.

Roles follow AlphaStar (and DI-engine's league): each is a small stateless
class that, given a read-only ``LeagueView`` (players, snapshots, payoff),
says whom its player should play, whether it has earned a snapshot and whether
it restarts afterwards. All mutable state lives in ``League``
(``league.core.league``); roles are pure functions of the view (plus an
explicit ``np.random.Generator``), which is what makes matchmaking testable
without Ray.

- ``MainAgent``: the product. Mixes self-play against the current mains, PFSP
  over every snapshot, PFSP over the snapshots it risks forgetting (main
  snapshots it no longer beats well) plus past main exploiters, the live main
  exploiters, and PFSP over the reference opponents. Never resets by itself; with
  ``main_adopts_exploiter_win_rate`` it restarts from a main exploiter that beats it.
- ``MainExploiter``: finds weaknesses of the current mains. Plays a current
  main, or -- when it cannot beat it yet, and half of the time anyway -- that
  main's snapshots as a curriculum. Resets after every snapshot, so each
  lineage is a fresh attempt (unless a main adopted it: it then carries on as
  the main's copy).
- ``LeagueExploiter``: finds weaknesses of the whole league by PFSP over all
  snapshots. Resets sometimes, to diversify without losing all progress.

Sides (`league.core.seats`): a role computes its opponent mix once per *opponent
side*, the side whose seats the opponent fills. In a symmetric game that is the
player's own side and everything reads as in a two-player league. With predators
and prey, the prey main's self-play is against the predator mains, its PFSP over
predator snapshots, its exploiter games against the predator main exploiters
(which hunt the prey main), and so on: every rule speaks of "the opponent side".
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from league.core.config import LeagueConfig
from league.core.ids import LEAGUE_EXPLOITER, MAIN, MAIN_EXPLOITER, parse_module_id, side_of
from league.core.model import LeagueView, Reset
from league.core.pfsp import pfsp_weights


@dataclass(frozen=True)
class Branch:
    """One part of a role's opponent mix (e.g. the main's 50% of PFSP over all
    snapshots): ``mass`` spread over ``weights``' candidates in proportion to their
    weights. Restricted to the modules env runners hold, the branch keeps its mass:
    it spreads it over the candidates still there (uniformly if all their weights
    vanish), or over ``fallback`` (the current mains) when none is.
    """

    mass: float
    weights: Mapping[str, float]
    fallback: tuple[str, ...]

    def resolve(self, allowed: Collection[str] | None = None) -> dict[str, float]:
        """Opponent -> probability mass of this branch among ``allowed`` modules."""
        present = [c for c in self.weights if allowed is None or c in allowed]
        if not present:
            return {c: self.mass / len(self.fallback) for c in self.fallback}
        total = math.fsum(self.weights[c] for c in present)
        if total <= 0.0:  # PFSP's rule: no candidate preferable, play them uniformly
            return {c: self.mass / len(present) for c in present}
        return {c: self.mass * self.weights[c] / total for c in present}


def mix(branches: Iterable[Branch], allowed: Collection[str] | None = None) -> dict[str, float]:
    """The opponent distribution of a role's branches, restricted to ``allowed``."""
    dist: dict[str, float] = {}
    for branch in branches:
        if branch.mass <= 0.0:
            continue
        for candidate, p in branch.resolve(allowed).items():
            dist[candidate] = dist.get(candidate, 0.0) + p
    return {m: p for m, p in dist.items() if p > 0.0}


def _pfsp(view: LeagueView, player: str, candidates: list[str], weighting: str) -> dict[str, float]:
    """Snapshot weights by PFSP, or by the league's Nash mixture (`opponent_sampling`)."""
    if not candidates:
        return {}
    if view.cfg.opponent_sampling in ("nash", "alpharank"):
        return {c: view.nash.get(c, 0.0) for c in candidates}
    weights = pfsp_weights(view.win_rates(player, candidates), weighting, view.cfg.pfsp_p)
    return {c: float(w) for c, w in zip(candidates, weights, strict=True)}


def surely_beats(view: LeagueView, player: str, opponent: str, win_rate: float) -> bool:
    """Whether ``player`` beats ``opponent`` at ``win_rate`` with confidence: at least
    ``snapshot_min_games`` decayed games, and the lower end of the Wilson interval at
    ``snapshot_confidence`` at ``win_rate`` or above (the point estimate alone opens
    on a lucky streak: 16 wins in 20 games is 0.8, yet its 95% lower bound is 0.58)."""
    cfg = view.cfg
    payoff = view.payoff
    return (
        payoff.games(player, opponent) >= cfg.snapshot_min_games
        and payoff.win_rate_lower_bound(player, opponent, cfg.snapshot_z) >= win_rate
    )


class Role:
    """Base role: snapshot gate shared by all roles; no reset."""

    name: ClassVar[str]

    def __init__(self, player: str, cfg: LeagueConfig) -> None:
        self.player = player
        self.cfg = cfg
        self.side = side_of(player)

    def opponent_sides(self, view: LeagueView) -> tuple[str, ...]:
        """The sides whose seats this player's opponents fill."""
        return view.layout.opponent_sides(self.side)

    def opponent_branches(self, view: LeagueView, side: str | None = None) -> list[Branch]:
        """The role's opponent mix on opponent ``side`` (default: the player's own) as
        branches (see ``Branch``)."""
        raise NotImplementedError

    def opponent_distribution(
        self, view: LeagueView, allowed: Collection[str] | None = None, side: str | None = None
    ) -> dict[str, float]:
        """Opponent module id -> probability (positive, summing to 1)."""
        return mix(self.opponent_branches(view, side), allowed)

    def targets(self, view: LeagueView) -> list[str]:
        """The opponents this role is judged against by the snapshot gate."""
        return [t for side in self.opponent_sides(view) for t in self.side_targets(view, side)]

    def side_targets(self, view: LeagueView, side: str) -> list[str]:
        """The gate's opponents on one opponent side."""
        raise NotImplementedError

    def snapshot_due(self, view: LeagueView) -> bool:
        """Win-rate gate (every target surely beaten at ``snapshot_win_rate``, see
        `surely_beats`) or the step budget.

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
            surely_beats(view, self.player, t, cfg.snapshot_win_rate) for t in targets
        )

    def reset_after_snapshot(self, view: LeagueView, rng: np.random.Generator) -> Reset | None:
        return None

    def adopters(self, view: LeagueView) -> tuple[str, ...]:
        """Players that restart from this one's weights as it snapshots (none here)."""
        return ()


class MainAgent(Role):
    name = MAIN

    def opponent_branches(self, view: LeagueView, side: str | None = None) -> list[Branch]:
        cfg = self.cfg
        side = self.side if side is None else side
        mains = tuple(view.player_ids(MAIN, side))
        main_snapshots = view.snapshot_ids(role=MAIN, side=side)
        rates = view.win_rates(self.player, main_snapshots)
        forgotten = [
            s for s, x in zip(main_snapshots, rates, strict=True) if x < cfg.main_forgotten_win_rate
        ]
        forgotten += view.snapshot_ids(role=MAIN_EXPLOITER, side=side)
        everyone = view.snapshot_ids(side=side)
        weighting = cfg.pfsp_weighting
        return [
            Branch(cfg.main_self_play_prob, dict.fromkeys(mains, 1.0), mains),
            Branch(cfg.main_pfsp_prob, _pfsp(view, self.player, everyone, weighting), mains),
            Branch(cfg.main_forgotten_prob, _pfsp(view, self.player, forgotten, weighting), mains),
            Branch(
                cfg.main_exploiter_prob,
                dict.fromkeys(view.player_ids(MAIN_EXPLOITER, side), 1.0),
                mains,
            ),
            Branch(
                cfg.main_reference_prob,
                _pfsp(view, self.player, list(view.references), weighting),
                mains,
            ),
        ]

    def side_targets(self, view: LeagueView, side: str) -> list[str]:
        return view.snapshot_ids(side=side)


class MainExploiter(Role):
    name = MAIN_EXPLOITER

    def opponent_branches(self, view: LeagueView, side: str | None = None) -> list[Branch]:
        cfg = self.cfg
        mains = view.player_ids(MAIN, self.side if side is None else side)
        branches = []
        for main in mains:
            share = 1.0 / len(mains)
            history = view.snapshot_ids(role=MAIN, player=main)
            losing = view.payoff.win_rate(self.player, main) < cfg.main_exploiter_switch_win_rate
            q = (1.0 if losing else cfg.main_exploiter_pfsp_prob) if history else 0.0
            weights = _pfsp(view, self.player, history, cfg.main_exploiter_weighting)
            branches.append(Branch(share * (1.0 - q), {main: 1.0}, (main,)))
            branches.append(Branch(share * q, weights, (main,)))
        return branches

    def side_targets(self, view: LeagueView, side: str) -> list[str]:
        return view.player_ids(MAIN, side)

    def adopters(self, view: LeagueView) -> tuple[str, ...]:
        """The mains that restart from this exploiter's weights as it snapshots: those
        it surely beats at `main_adopts_exploiter_win_rate` (PBT's exploit step)."""
        cfg = self.cfg
        threshold = cfg.main_adopts_exploiter_win_rate
        if threshold is None:
            return ()
        # Only a main of its own side can take its weights (the same spaces).
        return tuple(
            main
            for main in view.player_ids(MAIN, self.side)
            if surely_beats(view, self.player, main, threshold)
        )

    def reset_after_snapshot(self, view: LeagueView, rng: np.random.Generator) -> Reset | None:
        """Always: each lineage is a fresh search for a new exploit."""
        if self.cfg.main_exploiter_reset_to == "initial":
            return Reset(self.player, None)
        best = max(view.player_ids(MAIN, self.side), key=lambda m: (view.ratings.get(m, 0.0), m))
        return Reset(self.player, best)


class LeagueExploiter(Role):
    name = LEAGUE_EXPLOITER

    def opponent_branches(self, view: LeagueView, side: str | None = None) -> list[Branch]:
        side = self.side if side is None else side
        weights = _pfsp(view, self.player, view.snapshot_ids(side=side), self.cfg.pfsp_weighting)
        return [Branch(1.0, weights, tuple(view.player_ids(MAIN, side)))]

    def side_targets(self, view: LeagueView, side: str) -> list[str]:
        return view.snapshot_ids(side=side)

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
