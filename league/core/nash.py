"""The league's Nash: a meta-solver over the payoff table (PSRO's meta-strategy).

The league's frozen population is a symmetric two-player zero-sum meta-game whose
pure strategies are its snapshots and whose payoff is the score
margin M[i, j] = win_rate(i, j) - 1/2 from the decayed payoff table (0 where the
table has too few games, as `PayoffTable.win_rate` reads 1/2 there). Its
maximin mixture, found by a linear programme, is the league's best guess at an
unexploitable agent: a weight per module, exported as a mixture snapshot and
usable as a matchmaking distribution (`opponent_sampling: nash`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from league.core.payoff import PayoffTable

# Weights below this are LP round-off, not strategy.
WEIGHT_FLOOR = 1e-9


def payoff_matrix(payoff: PayoffTable, module_ids: Sequence[str]) -> np.ndarray:
    """M[i, j] = win_rate(i, j) - 1/2 (antisymmetric). Only pairs with recorded
    games can differ from 0, so the table's entries are visited, not all n^2 pairs."""
    index = {m: i for i, m in enumerate(module_ids)}
    margin = np.zeros((len(index), len(index)))
    for a, b in payoff.pairs():
        if a in index and b in index:
            value = payoff.win_rate(a, b) - 0.5
            margin[index[a], index[b]] = value
            margin[index[b], index[a]] = -value
    return margin


def maximin(matrix: np.ndarray) -> tuple[np.ndarray, float]:
    """The row player's maximin mixture of a zero-sum matrix game, and its value.

    max_x min_j (x^T A)_j over the simplex, as the LP: maximise v subject to
    A^T x >= v, sum(x) = 1, x >= 0 (HiGHS via scipy).
    """
    # Imported here: scipy costs half a second of every `league` command's start-up.
    from scipy.optimize import linprog

    a = np.asarray(matrix, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"need a finite, non-empty 2-D payoff matrix, got shape {a.shape}")
    rows, cols = a.shape
    objective = np.zeros(rows + 1)
    objective[-1] = -1.0  # minimise -v
    upper = np.hstack([-a.T, np.ones((cols, 1))])  # v - (A^T x)_j <= 0
    equal = np.hstack([np.ones((1, rows)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * rows + [(None, None)]
    result = linprog(
        objective, A_ub=upper, b_ub=np.zeros(cols), A_eq=equal, b_eq=[1.0], bounds=bounds
    )
    if not result.success:  # cannot happen for a finite matrix; say so if it does
        raise RuntimeError(f"meta-solver LP failed: {result.message}")
    weights = np.clip(result.x[:rows], 0.0, None)
    weights[weights < WEIGHT_FLOOR] = 0.0
    return weights / weights.sum(), float(result.x[-1])


def nash_weights(payoff: PayoffTable, module_ids: Sequence[str]) -> dict[str, float]:
    """Module id -> weight in the league's maximin mixture (weights > 0 only)."""
    ids = list(module_ids)
    if not ids:
        return {}
    weights, _ = maximin(payoff_matrix(payoff, ids))
    return {m: float(w) for m, w in zip(ids, weights, strict=True) if w > 0.0}
