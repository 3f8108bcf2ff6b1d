"""Meta-solvers over the league's payoff table: which mixture of its snapshots to
trust (and, with `opponent_sampling`, to play against), per side.

The payoff table is pairwise (team against team) whatever the game, so each side's
snapshots form a population whose meta-game reads win rates from it:

- ``nash``: the maximin mixture of a two-team game (`league.core.nash`). With one
  side it is the symmetric zero-sum meta-game's Nash; with two sides (predators and
  prey) the win rates of one side against the other make a constant-sum bimatrix
  game, and each side's maximin mixture is its Nash strategy. A game with more than
  two teams has no such solver: `check_solver` says so.
- ``alpharank``: alpha-rank's stationary distribution (OpenSpiel's
  `open_spiel.python.egt.alpharank`): single-population over one side's pairwise
  table, or two-population over two sides' cross table (each side's weights are the
  marginal of the joint distribution). It is defined for any number of seats and
  for general-sum payoffs, and it is not a Nash equilibrium: it ranks strategies by
  how evolution under selection pressure visits them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from league.core.nash import WEIGHT_FLOOR, maximin, nash_weights
from league.core.payoff import PayoffTable

SOLVERS: tuple[str, ...] = ("nash", "alpharank")
ALPHARANK_POPULATION = 50
ALPHARANK_ALPHA = 100.0


def check_solver(solver: str, num_teams: int, num_sides: int) -> None:
    """Refuse a solver the game has no meaning for (one line, naming the game's shape)."""
    if solver not in SOLVERS:
        raise ValueError(f"meta-solver must be one of {SOLVERS}, got {solver!r}")
    if solver == "nash" and num_teams > 2:
        raise ValueError(
            f"the Nash meta-solver needs a game of two teams; this one has {num_teams} teams "
            "(use alpharank)"
        )
    if solver == "alpharank" and num_sides > 2:
        raise ValueError(f"alpharank takes at most two sides; this game has {num_sides}")


def win_rate_table(payoff: PayoffTable, rows: Sequence[str], cols: Sequence[str]) -> np.ndarray:
    """T[i, j] = win_rate(rows[i], cols[j]) (1/2 without enough games)."""
    table = np.full((len(rows), len(cols)), 0.5)
    row_index = {m: i for i, m in enumerate(rows)}
    col_index = {m: j for j, m in enumerate(cols)}
    for a, b in payoff.pairs():
        for x, y in ((a, b), (b, a)):
            if x in row_index and y in col_index:
                table[row_index[x], col_index[y]] = payoff.win_rate(x, y)
    return table


def meta_weights(
    payoff: PayoffTable, ids_by_side: Mapping[str, Sequence[str]], solver: str = "nash"
) -> dict[str, float]:
    """Module id -> weight in its side's mixture (weights > 0 only; each side's sum to 1)."""
    sides = {side: list(ids) for side, ids in ids_by_side.items() if ids}
    if not sides:
        return {}
    if solver == "nash":
        if len(ids_by_side) == 1:
            ((ids),) = sides.values()
            return nash_weights(payoff, ids)
        return _two_side(payoff, ids_by_side, _nash_bimatrix)
    if solver == "alpharank":
        if len(ids_by_side) == 1:
            ((ids),) = sides.values()
            return _positive(ids, alpharank([win_rate_table(payoff, ids, ids)]))
        return _two_side(payoff, ids_by_side, _alpharank_bimatrix)
    raise ValueError(f"meta-solver must be one of {SOLVERS}, got {solver!r}")


def _two_side(
    payoff: PayoffTable, ids_by_side: Mapping[str, Sequence[str]], solve
) -> dict[str, float]:
    if len(ids_by_side) != 2:
        raise ValueError(f"a meta-solver over sides takes two sides, got {len(ids_by_side)}")
    first, second = (list(ids) for ids in ids_by_side.values())
    if not first or not second:
        # A side without snapshots: the other side's population has no opponent; uniform.
        ids = first or second
        return {m: 1.0 / len(ids) for m in ids}
    x, y = solve(win_rate_table(payoff, first, second))
    return {**_positive(first, x), **_positive(second, y)}


def _nash_bimatrix(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each side's maximin mixture of the constant-sum game T vs 1 - T."""
    margin = table - 0.5
    x, _ = maximin(margin)
    y, _ = maximin(-margin.T)
    return x, y


def _alpharank_bimatrix(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    joint = alpharank([table, 1.0 - table]).reshape(table.shape)
    return joint.sum(axis=1), joint.sum(axis=0)


def alpharank(payoff_tables: list[np.ndarray]) -> np.ndarray:
    """OpenSpiel's alpha-rank stationary distribution (one table: single population;
    two: the joint distribution over profiles, row-major)."""
    # Imported here: OpenSpiel's egt package loads matplotlib and pyspiel (about 1 s).
    from open_spiel.python.egt import alpharank as os_alpharank

    if payoff_tables[0].size == 1:
        return np.ones(1)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        _, _, pi, _, _ = os_alpharank.compute(
            payoff_tables, m=ALPHARANK_POPULATION, alpha=ALPHARANK_ALPHA
        )
    pi = np.clip(np.asarray(pi, dtype=np.float64), 0.0, None)
    return pi / pi.sum()


def _positive(ids: Sequence[str], weights: np.ndarray) -> dict[str, float]:
    weights = np.where(weights < WEIGHT_FLOOR, 0.0, weights)
    total = weights.sum()
    return {m: float(w / total) for m, w in zip(ids, weights, strict=True) if w > 0.0}
