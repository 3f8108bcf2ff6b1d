"""Decayed head-to-head results between league modules.

The payoff table is what matchmaking reads ("how often does A beat B lately?"),
so it forgets: every update first multiplies all counts by ``decay``, then adds
the new results. A player that keeps training thus gets judged on its recent
self, not on games played by its weights of long ago.

Each unordered pair is stored once, from the lexicographically smaller id's
point of view, so ``games(a, b) == games(b, a)`` and
``win_rate(a, b) + win_rate(b, a) == 1`` hold by construction rather than by
keeping two copies in sync.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from league.core.match import MatchRecord, pairwise_scores
from league.core.outcomes import wilson_interval


class PayoffTable:
    """Decayed wins/draws/losses per pair of module ids."""

    def __init__(self, decay: float = 0.99, min_games: float = 0.0) -> None:
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], got {decay}")
        if min_games < 0.0:
            raise ValueError(f"min_games must be >= 0, got {min_games}")
        self.decay = decay
        self.min_games = min_games
        # (a, b) with a < b -> [wins, draws, losses] of a against b.
        self._wdl: dict[tuple[str, str], list[float]] = {}

    def update(self, records: Iterable[MatchRecord]) -> None:
        """Decay once, then add ``records``. Call once per iteration: the decay
        rate is per call, so calling per match would forget far too fast."""
        for counts in self._wdl.values():
            counts[0] *= self.decay
            counts[1] *= self.decay
            counts[2] *= self.decay
        for record in records:
            for a, b, score in pairwise_scores(record):
                self.add_result(a, b, score)

    def add_result(self, a: str, b: str, score: float) -> None:
        """Add one undecayed game of ``a`` against ``b`` (score 1/0.5/0)."""
        if a == b:
            return
        if score not in (0.0, 0.5, 1.0):
            raise ValueError(f"score must be 0, 0.5 or 1, got {score}")
        self._add(a, b, score, 1.0)

    def wdl(self, a: str, b: str) -> tuple[float, float, float]:
        """Decayed (wins, draws, losses) of ``a`` against ``b``."""
        if a <= b:
            w, d, lo = self._wdl.get((a, b), (0.0, 0.0, 0.0))
            return w, d, lo
        w, d, lo = self._wdl.get((b, a), (0.0, 0.0, 0.0))
        return lo, d, w

    def games(self, a: str, b: str) -> float:
        """Decayed number of games between ``a`` and ``b`` (either order)."""
        return sum(self.wdl(a, b))

    def win_rate(self, a: str, b: str) -> float:
        """``(wins + draws / 2) / games`` of ``a`` vs ``b``; 0.5 (no evidence
        either way) below ``min_games``, when there are no games, or for a
        module against itself."""
        w, d, lo = self.wdl(a, b)
        games = w + d + lo
        if a == b or games <= 0.0 or games < self.min_games:
            return 0.5
        return (w + 0.5 * d) / games

    def win_rate_lower_bound(self, a: str, b: str, z: float) -> float:
        """Lower end of the Wilson interval (``z`` standard errors) of ``a``'s score
        against ``b`` over the decayed games, draws counted as half a win: how well
        ``a`` surely beats ``b``. 0 without games; ``z == 0`` gives the point estimate.
        """
        w, d, lo = self.wdl(a, b)
        games = w + d + lo
        if a == b or games <= 0.0:
            return 0.0
        return wilson_interval(w + 0.5 * d, games, z)[0]

    def pairs(self) -> list[tuple[str, str]]:
        """Every pair ``(a, b)``, ``a < b``, with recorded games."""
        return list(self._wdl)

    def win_rates(self, a: str, opponents: Iterable[str]) -> list[float]:
        return [self.win_rate(a, b) for b in opponents]

    def inherit(self, child: str, parent: str) -> None:
        """Give ``child`` (a new snapshot) ``parent``'s results against everyone else.

        A snapshot is a copy of its player's weights, so the player's recent
        results are the best estimate of the snapshot's (as `Ratings.inherit`
        does for ratings). Without this, frozen snapshots, which only ever play
        live players, would have no results against each other and the league's
        Nash over its snapshots would be a guess (every margin 0).
        """
        for a, b in list(self._wdl):
            if parent not in (a, b):
                continue
            other = b if a == parent else a
            if other == child:
                continue
            w, d, lo = self.wdl(parent, other)
            self._wdl.pop(tuple(sorted((child, other))), None)
            for score, count in ((1.0, w), (0.5, d), (0.0, lo)):
                if count > 0.0:
                    self._add(child, other, score, count)

    def _add(self, a: str, b: str, score: float, count: float) -> None:
        if a > b:
            a, b, score = b, a, 1.0 - score
        counts = self._wdl.setdefault((a, b), [0.0, 0.0, 0.0])
        counts[0 if score == 1.0 else 1 if score == 0.5 else 2] += count

    def remove(self, module_id: str) -> None:
        """Forget every result involving ``module_id`` (retired or reset: its
        past results no longer describe any live policy)."""
        for pair in [p for p in self._wdl if module_id in p]:
            del self._wdl[pair]

    def get_state(self) -> dict[str, Any]:
        """JSON-able state: ``{"entries": [[a, b, wins, draws, losses], ...]}``
        with ``a < b``, sorted. Decay and min_games come from the config."""
        return {"entries": [[a, b, *self._wdl[(a, b)]] for a, b in sorted(self._wdl)]}

    def set_state(self, state: Mapping[str, Any]) -> None:
        wdl: dict[tuple[str, str], list[float]] = {}
        for a, b, w, d, lo in state["entries"]:
            if a >= b:
                raise ValueError(f"payoff entry must have a < b: {a!r}, {b!r}")
            wdl[(a, b)] = [float(w), float(d), float(lo)]
        self._wdl = wdl
