"""Win/draw/loss counts of one seat and their confidence intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass


def wilson_interval(successes: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion, 95% at the default ``z`` (well-behaved
    at 0 and 1). Counts may be fractional: decayed payoff counts, draws as halves."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class SeatRecord:
    """Games one policy played from one seat: wins, draws, losses."""

    seat: str
    wins: int
    draws: int
    losses: int
    total_return: float = 0.0
    """Sum of the seat's returns (chips in poker; +1/0/-1 in win/lose games)."""

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def mean_return(self) -> float:
        return self.total_return / self.games if self.games else 0.0

    def rate(self, outcome: str) -> float:
        return getattr(self, outcome) / self.games if self.games else 0.0

    def interval(self, outcome: str) -> tuple[float, float]:
        return wilson_interval(getattr(self, outcome), self.games)

    def format(self) -> str:
        parts = []
        for outcome, letter in (("wins", "W"), ("draws", "D"), ("losses", "L")):
            lo, hi = self.interval(outcome)
            parts.append(f"{letter} {self.rate(outcome):.3f} [{lo:.3f}, {hi:.3f}]")
        return (
            f"seat {self.seat}: "
            + "  ".join(parts)
            + f"  mean return {self.mean_return:+.3f}  ({self.games} games)"
        )
