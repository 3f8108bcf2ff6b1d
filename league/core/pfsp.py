"""Prioritized fictitious self-play (PFSP) weightings.

PFSP turns "how often do I beat each candidate" into "how often should I play
each candidate". The weightings are pure functions of an array of win rates so
matchmaking can be reasoned about (and tested) without a league:

- ``hard``: ``(1 - x) ** p``. Focuses on the opponents we still lose to; with a
  large ``p`` it ignores what is already beaten (AlphaStar's "squared" is p=2).
- ``var``: ``x * (1 - x)``. Peaks at even matches: a curriculum for a weak
  player (an exploiter that cannot yet beat the current main).
- ``linear``: ``1 - x``. A softer ``hard``.
- ``linear_capped``: ``min(0.5, 1 - x)``. Like ``linear`` but stops hard
  opponents from dominating the mix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Weighting = Callable[[np.ndarray, float], np.ndarray]


def hard(win_rates: np.ndarray, p: float = 2.0) -> np.ndarray:
    """``(1 - x) ** p``: prioritise opponents we lose to."""
    return (1.0 - win_rates) ** p


def var(win_rates: np.ndarray, p: float = 2.0) -> np.ndarray:
    """``x (1 - x)``: prioritise even matches; ``p`` is ignored."""
    del p
    return win_rates * (1.0 - win_rates)


def linear(win_rates: np.ndarray, p: float = 2.0) -> np.ndarray:
    """``1 - x``; ``p`` is ignored."""
    del p
    return 1.0 - win_rates


def linear_capped(win_rates: np.ndarray, p: float = 2.0) -> np.ndarray:
    """``min(0.5, 1 - x)``; ``p`` is ignored."""
    del p
    return np.minimum(0.5, 1.0 - win_rates)


WEIGHTINGS: dict[str, Weighting] = {
    "hard": hard,
    "var": var,
    "linear": linear,
    "linear_capped": linear_capped,
}


def _as_win_rates(win_rates: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(win_rates, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"win_rates must be one-dimensional, got shape {x.shape}")
    if x.size == 0:
        raise ValueError("win_rates is empty: PFSP needs at least one candidate")
    if not np.all(np.isfinite(x)) or np.any(x < 0.0) or np.any(x > 1.0):
        raise ValueError(f"win_rates must lie in [0, 1], got {x.tolist()}")
    return x


def pfsp_weights(
    win_rates: Sequence[float] | np.ndarray, weighting: str = "hard", p: float = 2.0
) -> np.ndarray:
    """Unnormalised PFSP weights, one per candidate."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {sorted(WEIGHTINGS)}, got {weighting!r}")
    if not p > 0:
        raise ValueError(f"p must be > 0, got {p}")
    return WEIGHTINGS[weighting](_as_win_rates(win_rates), p)


def pfsp_probabilities(
    win_rates: Sequence[float] | np.ndarray, weighting: str = "hard", p: float = 2.0
) -> np.ndarray:
    """PFSP sampling probabilities over the candidates.

    When every weight vanishes (e.g. ``hard`` and we beat everyone, or ``var``
    and we beat no one) the caller still has to play someone, and no candidate
    is preferable to another, so the distribution falls back to uniform.
    """
    w = pfsp_weights(win_rates, weighting, p)
    total = float(w.sum())
    if total <= 0.0:
        return np.full(w.size, 1.0 / w.size)
    return w / total
