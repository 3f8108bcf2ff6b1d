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

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from league.league_config import (
    LEAGUE_EXPLOITER,
    MAIN,
    MAIN_EXPLOITER,
    LeagueConfig,
    is_player_id,
    is_snapshot_id,
    parse_module_id,
    snapshot_id,
)
from league.match import MatchRecord
from league.payoff import PayoffTable
from league.pfsp import pfsp_probabilities
from league.ratings import EloRatings

STATE_FORMAT = 1


@dataclass(frozen=True)
class Player:
    """A trainable player and its training progress."""

    id: str
    role: str
    steps: int = 0
    """Env steps trained, in total (across resets)."""
    last_snapshot_step: int = 0
    next_version: int = 0
    parent: str | None = None
    """Lineage head: its latest snapshot, or the module it was reset from."""
    latest_snapshot: str | None = None
    resets: int = 0


@dataclass(frozen=True)
class Snapshot:
    """A frozen copy of a player: the registry entry and snapshot metadata.

    ``rating`` is the current rating; the league refreshes it after every
    ``record`` so the registry and the ratings never disagree.
    """

    id: str
    player: str
    version: int
    role: str
    parent: str | None
    step: int
    iteration: int
    rating: float


@dataclass(frozen=True)
class Reset:
    """Restart ``player`` from the initial weights (``source is None``) or
    from a copy of module ``source``'s current weights."""

    player: str
    source: str | None = None


@dataclass(frozen=True)
class Decision:
    """What the league wants done this iteration, before anything changes."""

    snapshots: tuple[str, ...] = ()
    resets: tuple[Reset, ...] = ()


@dataclass(frozen=True)
class LeagueView:
    """What roles may look at. ``snapshots`` may be a subset of the league
    (the active set) so matchmaking only names modules env runners hold."""

    cfg: LeagueConfig
    players: Mapping[str, Player]
    snapshots: Mapping[str, Snapshot]
    payoff: PayoffTable
    ratings: Mapping[str, float]

    def player_ids(self, role: str | None = None) -> list[str]:
        return [p.id for p in self.players.values() if role in (None, p.role)]

    def snapshot_ids(self, role: str | None = None, player: str | None = None) -> list[str]:
        return [
            s.id
            for s in self.snapshots.values()
            if role in (None, s.role) and player in (None, s.player)
        ]

    def win_rates(self, player: str, opponents: Iterable[str]) -> np.ndarray:
        return np.asarray(self.payoff.win_rates(player, opponents), dtype=np.float64)


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


class League:
    """Players, snapshot registry, payoff and ratings; the only mutable part.

    Everything random takes an explicit generator, so a league replayed from
    the same state and seed makes the same decisions.
    """

    def __init__(self, cfg: LeagueConfig | None = None) -> None:
        self.cfg = cfg if cfg is not None else LeagueConfig()
        self.payoff = PayoffTable(self.cfg.payoff_decay, self.cfg.payoff_min_games)
        self.ratings = EloRatings(self.cfg.elo_k, self.cfg.elo_initial, self.cfg.elo_scale)
        self._players: dict[str, Player] = {}
        self._snapshots: dict[str, Snapshot] = {}
        self._add_missing_players()

    def _add_missing_players(self) -> None:
        for pid in self.cfg.player_ids():
            if pid not in self._players:
                self._players[pid] = Player(pid, parse_module_id(pid).role)
                self.ratings.set(pid, self.cfg.elo_initial)

    # ---- read access -------------------------------------------------------

    @property
    def players(self) -> Mapping[str, Player]:
        return MappingProxyType(self._players)

    @property
    def snapshots(self) -> Mapping[str, Snapshot]:
        """Snapshot registry, in creation order."""
        return MappingProxyType(self._snapshots)

    def module_ids(self) -> tuple[str, ...]:
        return (*self._players, *self._snapshots)

    def role(self, player: str) -> Role:
        if player not in self._players:
            raise KeyError(f"unknown player {player!r}")
        return make_role(player, self.cfg)

    def view(self, active: Iterable[str] | None = None) -> LeagueView:
        """Read-only view; with ``active``, only those snapshots are visible."""
        if active is None:
            snaps: Mapping[str, Snapshot] = self.snapshots
        else:
            wanted = set(active)
            unknown = sorted(wanted - set(self._snapshots))
            if unknown:
                raise ValueError(f"active set names unknown snapshots: {unknown}")
            snaps = {s: v for s, v in self._snapshots.items() if s in wanted}
        return LeagueView(self.cfg, self.players, snaps, self.payoff, self.ratings.as_dict())

    def latest_snapshots(self, role: str | None = None) -> dict[str, str]:
        """Player -> its latest snapshot id (players without one are left out)."""
        return {
            p.id: p.latest_snapshot
            for p in self._players.values()
            if p.latest_snapshot is not None and role in (None, p.role)
        }

    # ---- updates -------------------------------------------------------------

    def record(self, matches: Iterable[MatchRecord]) -> int:
        """Fold one iteration's matches into payoff and ratings (decaying the
        payoff once). Matches naming a module no longer in the league (retired
        while the episode ran) are dropped; returns how many were used."""
        known = set(self.module_ids())
        used = [m for m in matches if set(m.modules.values()) <= known]
        self.payoff.update(used)
        self.ratings.update(used)
        self._sync_snapshot_ratings()
        return len(used)

    def add_steps(self, steps: Mapping[str, int]) -> None:
        """Add env steps trained per player since the last call (drives the
        snapshot step budget)."""
        for pid, n in steps.items():
            if pid not in self._players:
                raise KeyError(f"unknown player {pid!r}")
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
                raise ValueError(f"steps[{pid!r}] must be an int >= 0, got {n!r}")
            player = self._players[pid]
            self._players[pid] = dataclasses.replace(player, steps=player.steps + int(n))

    def decide(self, rng: np.random.Generator) -> Decision:
        """Which players snapshot and which then reset; changes nothing.

        Players are visited in creation order and the generator is used only
        for reset draws, so decisions are reproducible from a seed.
        """
        view = self.view()
        snapshots: list[str] = []
        resets: list[Reset] = []
        for pid in self._players:
            role = self.role(pid)
            if role.snapshot_due(view):
                snapshots.append(pid)
                reset = role.reset_after_snapshot(view, rng)
                if reset is not None:
                    resets.append(reset)
        return Decision(tuple(snapshots), tuple(resets))

    def apply(self, decision: Decision, iteration: int) -> tuple[str, ...]:
        """Take the decided snapshots, then the resets; returns new snapshot ids
        (the caller exports the players' current weights under them)."""
        new_ids = tuple(self.take_snapshot(pid, iteration) for pid in decision.snapshots)
        for reset in decision.resets:
            self.reset_player(reset.player, reset.source)
        return new_ids

    def take_snapshot(self, player: str, iteration: int) -> str:
        """Register a frozen copy of ``player``; returns ``<player>@<version>``."""
        if player not in self._players:
            raise KeyError(f"unknown player {player!r}")
        p = self._players[player]
        sid = snapshot_id(player, p.next_version)
        rating = self.ratings.inherit(sid, player)
        self._snapshots[sid] = Snapshot(
            id=sid,
            player=player,
            version=p.next_version,
            role=p.role,
            parent=p.parent,
            step=p.steps,
            iteration=int(iteration),
            rating=rating,
        )
        self._players[player] = dataclasses.replace(
            p,
            last_snapshot_step=p.steps,
            next_version=p.next_version + 1,
            parent=sid,
            latest_snapshot=sid,
        )
        return sid

    def reset_player(self, player: str, source: str | None = None) -> None:
        """Record that ``player`` restarted from initial weights or ``source``.

        Its payoff rows are dropped (they describe weights that no longer
        exist) and it takes the initial rating or ``source``'s rating.
        """
        if player not in self._players:
            raise KeyError(f"unknown player {player!r}")
        if source is not None and source not in self.module_ids():
            raise KeyError(f"unknown reset source {source!r}")
        p = self._players[player]
        self.payoff.remove(player)
        if source is None:
            self.ratings.set(player, self.cfg.elo_initial)
        else:
            self.ratings.set(player, self.ratings.rating(source))
        self._players[player] = dataclasses.replace(p, parent=source, resets=p.resets + 1)

    def retire(self, snapshot_ids: Iterable[str]) -> None:
        """Remove snapshots from registry, payoff and ratings.

        Refuses trainable players and any player's latest snapshot: matchmaking
        and lineage rely on them.
        """
        ids = list(snapshot_ids)
        latest = set(self.latest_snapshots().values())
        for sid in ids:
            if sid not in self._snapshots:
                raise ValueError(f"cannot retire {sid!r}: not a snapshot in the league")
            if sid in latest:
                raise ValueError(f"cannot retire {sid!r}: latest snapshot of its player")
        for sid in ids:
            del self._snapshots[sid]
            self.payoff.remove(sid)
            self.ratings.remove(sid)

    def _sync_snapshot_ratings(self) -> None:
        for sid, snap in self._snapshots.items():
            rating = self.ratings.rating(sid)
            if rating != snap.rating:
                self._snapshots[sid] = dataclasses.replace(snap, rating=rating)

    # ---- state -----------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """Whole league as plain JSON-able data (the config is not included:
        it is given to the constructor)."""
        return {
            "format": STATE_FORMAT,
            "players": [dataclasses.asdict(p) for p in self._players.values()],
            "snapshots": [dataclasses.asdict(s) for s in self._snapshots.values()],
            "payoff": self.payoff.get_state(),
            "ratings": self.ratings.get_state(),
        }

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Replace the league with ``state``. Players the config names but the
        state lacks (the config grew) join fresh."""
        if state.get("format") != STATE_FORMAT:
            raise ValueError(f"unsupported league state format: {state.get('format')!r}")
        players: dict[str, Player] = {}
        for data in state["players"]:
            player = Player(**data)
            if not is_player_id(player.id) or parse_module_id(player.id).role != player.role:
                raise ValueError(f"bad player in state: {data}")
            players[player.id] = player
        snapshots: dict[str, Snapshot] = {}
        for data in state["snapshots"]:
            snap = Snapshot(**data)
            if not is_snapshot_id(snap.id) or snap.id != snapshot_id(snap.player, snap.version):
                raise ValueError(f"bad snapshot in state: {data}")
            snapshots[snap.id] = snap
        self._players = players
        self._snapshots = snapshots
        self.payoff.set_state(state["payoff"])
        self.ratings.set_state(state["ratings"])
        self._add_missing_players()
        self._sync_snapshot_ratings()

    @classmethod
    def from_state(cls, cfg: LeagueConfig, state: Mapping[str, Any]) -> League:
        league = cls(cfg)
        league.set_state(state)
        return league
