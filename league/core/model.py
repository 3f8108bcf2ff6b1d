"""The league's records: players, snapshots, decisions, and the read-only view roles see."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from league.core.config import LeagueConfig
from league.core.ids import side_of
from league.core.meta import meta_weights
from league.core.payoff import PayoffTable
from league.core.seats import SeatLayout

TWO_PLAYER_LAYOUT = SeatLayout.free_for_all(("player_0", "player_1"))
"""The layout a league assumes when given none: a symmetric two-player game."""


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
    references: tuple[str, ...] = ()
    """Reference opponents' ids (``ref=<name>``); always on env runners."""
    layout: SeatLayout = TWO_PLAYER_LAYOUT

    def player_ids(self, role: str | None = None, side: str | None = None) -> list[str]:
        """Trainable players, of one role and one side where given."""
        return [
            p.id
            for p in self.players.values()
            if role in (None, p.role) and side in (None, side_of(p.id))
        ]

    @cached_property
    def nash(self) -> dict[str, float]:
        """Weights of the league's meta-solver mixture over the visible snapshots, per
        side (`league.core.meta`: Nash or alpha-rank as `opponent_sampling` says;
        computed on first use)."""
        solver = "alpharank" if self.cfg.opponent_sampling == "alpharank" else "nash"
        sides = {side: self.snapshot_ids(side=side) for side in self.layout.sides}
        return meta_weights(self.payoff, sides, solver)

    def snapshot_ids(
        self, role: str | None = None, player: str | None = None, side: str | None = None
    ) -> list[str]:
        return [
            s.id
            for s in self.snapshots.values()
            if role in (None, s.role)
            and player in (None, s.player)
            and side in (None, side_of(s.player))
        ]

    def win_rates(self, player: str, opponents: Iterable[str]) -> np.ndarray:
        return np.asarray(self.payoff.win_rates(player, opponents), dtype=np.float64)
