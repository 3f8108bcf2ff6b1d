"""Elo ratings for every league module.

Ratings complement the payoff table: the payoff only knows pairs that met
recently, the rating puts every player and snapshot on one scale (for
retirement, reports and snapshot metadata). Updates come from every match
record; a draw scores 0.5 for both sides, so it pulls ratings together and
never counts as a loss.

Within one record all pairwise deltas are computed from the ratings before the
record and applied together, so seat order does not matter; records are applied
in the order given. In n-player games each pair uses ``k / (n - 1)`` so one game
moves a rating about as much as a two-player game.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from league.core.match import MatchRecord, pairwise_scores


class EloRatings:
    """Elo rating per module id; unknown ids start at ``initial``."""

    def __init__(self, k: float = 16.0, initial: float = 1000.0, scale: float = 400.0) -> None:
        if not k > 0 or not scale > 0:
            raise ValueError(f"k and scale must be > 0, got k={k}, scale={scale}")
        self.k = k
        self.initial = initial
        self.scale = scale
        self._ratings: dict[str, float] = {}

    def rating(self, module_id: str) -> float:
        return self._ratings.get(module_id, self.initial)

    def set(self, module_id: str, rating: float) -> None:
        self._ratings[module_id] = float(rating)

    def inherit(self, child: str, parent: str) -> float:
        """Start ``child`` at ``parent``'s rating: a snapshot is a copy of its
        player's weights, so it is as strong as the player is rated now."""
        rating = self.rating(parent)
        self._ratings[child] = rating
        return rating

    def remove(self, module_id: str) -> None:
        self._ratings.pop(module_id, None)

    def as_dict(self) -> dict[str, float]:
        return dict(self._ratings)

    def expected(self, a: str, b: str) -> float:
        """Expected score of ``a`` against ``b``."""
        diff = self.rating(b) - self.rating(a)
        return 1.0 / (1.0 + 10.0 ** (diff / self.scale))

    def update(self, records: Iterable[MatchRecord]) -> None:
        for record in records:
            pairs = pairwise_scores(record)
            if not pairs:
                continue
            k = self.k / (len(record.modules) - 1)
            delta: dict[str, float] = {}
            for a, b, score in pairs:
                change = k * (score - self.expected(a, b))
                delta[a] = delta.get(a, 0.0) + change
                delta[b] = delta.get(b, 0.0) - change
            for module_id, change in delta.items():
                self._ratings[module_id] = self.rating(module_id) + change

    def get_state(self) -> dict[str, Any]:
        return {"ratings": dict(sorted(self._ratings.items()))}

    def set_state(self, state: Mapping[str, Any]) -> None:
        self._ratings = {str(m): float(r) for m, r in state["ratings"].items()}
