"""The league's records: players, snapshots, decisions, and the read-only view roles see."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from league.core.config import LeagueConfig
from league.core.nash import nash_weights
from league.core.payoff import PayoffTable


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
    """Reference opponents' ids (``ref:<name>``); always on env runners."""

    def player_ids(self, role: str | None = None) -> list[str]:
        return [p.id for p in self.players.values() if role in (None, p.role)]

    @cached_property
    def nash(self) -> dict[str, float]:
        """Weights of the Nash mixture of the visible snapshots (computed on first use)."""
        return nash_weights(self.payoff, list(self.snapshots))

    def snapshot_ids(self, role: str | None = None, player: str | None = None) -> list[str]:
        return [
            s.id
            for s in self.snapshots.values()
            if role in (None, s.role) and player in (None, s.player)
        ]

    def win_rates(self, player: str, opponents: Iterable[str]) -> np.ndarray:
        return np.asarray(self.payoff.win_rates(player, opponents), dtype=np.float64)
