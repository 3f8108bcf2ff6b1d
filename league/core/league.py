"""League: players, snapshot registry, payoff and ratings; the only mutable part.

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
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from league.core.config import LeagueConfig
from league.core.ids import (
    is_player_id,
    is_snapshot_id,
    parse_module_id,
    side_of,
    snapshot_id,
    upgrade_reference_ids,
)
from league.core.match import MatchRecord
from league.core.meta import check_solver
from league.core.model import TWO_PLAYER_LAYOUT, Decision, LeagueView, Player, Reset, Snapshot
from league.core.payoff import PayoffTable
from league.core.ratings import ELO, EloRatings, Ratings, SkillRatings, rating_kind
from league.core.roles import Role, make_role
from league.core.seats import SeatLayout

STATE_FORMAT = 1
RECORDED_EPISODES_KEPT = 100_000


class League:
    """Players, snapshot registry, payoff and ratings; the only mutable part.

    Everything random takes an explicit generator, so a league replayed from
    the same state and seed makes the same decisions.
    """

    def __init__(self, cfg: LeagueConfig | None = None, layout: SeatLayout | None = None) -> None:
        self.cfg = cfg if cfg is not None else LeagueConfig()
        self.layout = layout if layout is not None else TWO_PLAYER_LAYOUT
        check_league_fits_layout(self.cfg, self.layout)
        self.rating_kind = rating_kind(self.cfg.ratings, self.layout.two_player)
        self.payoff = PayoffTable(self.cfg.payoff_decay, self.cfg.payoff_min_games)
        self.ratings: Ratings = self._new_ratings()
        self._players: dict[str, Player] = {}
        self._snapshots: dict[str, Snapshot] = {}
        # Recently recorded episodes, so one given twice counts once (bounded: the
        # store's match log is the durable dedupe).
        self._recorded: OrderedDict[str, None] = OrderedDict()
        self._add_missing_players()

    def _new_ratings(self) -> Ratings:
        if self.rating_kind == ELO:
            return EloRatings(self.cfg.elo_k, self.cfg.elo_initial, self.cfg.elo_scale)
        return SkillRatings()

    def _add_missing_players(self) -> None:
        for pid in self.cfg.player_ids(None, self.layout.sides):
            if pid not in self._players:
                self._players[pid] = Player(pid, parse_module_id(pid).role)
                self.ratings.reset(pid)
        for rid in self.references:
            self.ratings.add(rid)

    # ---- read access -------------------------------------------------------

    @property
    def players(self) -> Mapping[str, Player]:
        return MappingProxyType(self._players)

    @property
    def snapshots(self) -> Mapping[str, Snapshot]:
        """Snapshot registry, in creation order."""
        return MappingProxyType(self._snapshots)

    @property
    def references(self) -> tuple[str, ...]:
        """Reference opponents (``ref=<name>``): frozen scripted members named by the
        config, always on env runners; they have payoff rows and ratings but no
        snapshots, are never retired and never reset."""
        return self.cfg.reference_ids()

    def module_ids(self) -> tuple[str, ...]:
        return (*self._players, *self._snapshots, *self.references)

    def role(self, player: str) -> Role:
        if player not in self._players:
            raise KeyError(f"unknown player {player!r}")
        return make_role(player, self.cfg.for_side(side_of(player)))

    def view(self, active: Iterable[str] | None = None) -> LeagueView:
        """Read-only view; with ``active``, only those snapshots are visible."""
        if active is None:
            snaps: Mapping[str, Snapshot] = self.snapshots
        else:
            wanted = set(active) - set(self.references)  # references are always visible
            unknown = sorted(wanted - set(self._snapshots))
            if unknown:
                raise ValueError(f"active set names unknown snapshots: {unknown}")
            snaps = {s: v for s, v in self._snapshots.items() if s in wanted}
        return LeagueView(
            self.cfg,
            self.players,
            snaps,
            self.payoff,
            self.ratings.as_dict(),
            self.references,
            self.layout,
        )

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
        used = []
        for match in matches:
            if match.episode_id in self._recorded or not set(match.modules.values()) <= known:
                continue
            self._recorded[match.episode_id] = None
            used.append(match)
        while len(self._recorded) > RECORDED_EPISODES_KEPT:
            self._recorded.popitem(last=False)
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
                adopters = role.adopters(view)
                resets += [Reset(main, pid) for main in adopters]
                reset = role.reset_after_snapshot(view, rng)
                # An adopted exploiter already holds the weights it would restart from.
                if reset is not None and reset.source not in adopters:
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
        self.payoff.inherit(sid, player)
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
        self.ratings.reset(player, source)
        self._players[player] = dataclasses.replace(p, parent=source, resets=p.resets + 1)

    def retire(self, snapshot_ids: Iterable[str]) -> None:
        """Remove snapshots from registry, payoff and ratings.

        Refuses trainable players and any player's latest snapshot: matchmaking
        and lineage rely on them.
        """
        ids = list(snapshot_ids)
        if len(set(ids)) != len(ids):  # checked before anything changes
            raise ValueError(f"cannot retire the same snapshot twice: {sorted(ids)}")
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
        state lacks (the config grew) join fresh. All or nothing: the whole state is
        parsed into new objects first, so a malformed one leaves the league as it was."""
        if not isinstance(state, Mapping) or state.get("format") != STATE_FORMAT:
            got = state.get("format") if isinstance(state, Mapping) else type(state).__name__
            raise ValueError(f"unsupported league state format: {got!r}")
        missing = [k for k in ("players", "snapshots", "payoff", "ratings") if k not in state]
        if missing:
            raise ValueError(f"league state is missing {', '.join(missing)}")
        try:
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
            payoff = PayoffTable(self.cfg.payoff_decay, self.cfg.payoff_min_games)
            payoff.set_state(state["payoff"])
            ratings = self._new_ratings()
            ratings.set_state(state["ratings"])
        except (TypeError, KeyError, AttributeError) as err:
            raise ValueError(f"malformed league state: {err!r}") from err
        self._players, self._snapshots = players, snapshots
        self.payoff, self.ratings = payoff, ratings
        self._add_missing_players()
        self._sync_snapshot_ratings()

    @classmethod
    def from_state(
        cls, cfg: LeagueConfig, state: Mapping[str, Any], layout: SeatLayout | None = None
    ) -> League:
        league = cls(cfg, layout)
        league.set_state(upgrade_reference_ids(state))  # a state stored with `ref:` ids
        return league


def check_league_fits_layout(cfg: LeagueConfig, layout: SeatLayout) -> None:
    """League settings a game's seats rule out, refused with the reason."""
    if cfg.opponent_sampling in ("nash", "alpharank"):
        check_solver(cfg.opponent_sampling, len(layout.teams), len(layout.sides))
    if cfg.main_mix_by_side and not layout.multi_side:
        raise ValueError("main_mix_by_side is for games of several sides; this game has one")
    unknown = sorted(set(cfg.main_mix_by_side) - set(layout.sides))
    if unknown:
        raise ValueError(
            f"main_mix_by_side names {unknown}, not a side of this game "
            f"(its sides: {', '.join(layout.sides)})"
        )
    if layout.multi_side and (cfg.reference_opponents or cfg.teacher):
        raise ValueError(
            f"reference opponents and teachers play one side's seats; this game has "
            f"{len(layout.sides)} sides ({', '.join(layout.sides)})"
        )
