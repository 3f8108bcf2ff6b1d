"""Which snapshots leave the league when it outgrows its budget.

Rule: while there are more than ``max_snapshots`` snapshots, retire the one
with the **lowest current Elo rating** (ties: the older one, by iteration then
version, then id). The weakest snapshot is the one PFSP would least often need
to revisit, and the rating covers every snapshot on one scale, unlike the
payoff table which only knows recent pairs.

Never retired: trainable players (they are not snapshots at all) and the latest
snapshot of every trainable player. Protecting mains' latest snapshots is what
the league relies on (the main's PFSP and its forgetting check need its most
recent self); protecting exploiters' latest as well avoids retiring a snapshot
taken this very iteration on the strength of a rating it has not yet had a
game to earn. When protected snapshots alone exceed the budget, the league
stays over budget rather than break that rule.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from league.core.ids import is_snapshot_id
from league.core.league import League
from league.core.model import Snapshot


def select_retirements(
    snapshots: Iterable[Snapshot], budget: int, protected: Collection[str] = ()
) -> tuple[str, ...]:
    """Ids to retire so that at most ``budget`` snapshots remain (as far as
    ``protected`` allows), lowest rating first. Pure: changes nothing."""
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    snaps = [s for s in snapshots if is_snapshot_id(s.id)]
    excess = len(snaps) - budget
    if excess <= 0:
        return ()
    candidates = [s for s in snaps if s.id not in protected]
    candidates.sort(key=lambda s: (s.rating, s.iteration, s.version, s.id))
    return tuple(s.id for s in candidates[:excess])


def protected_snapshots(league: League) -> frozenset[str]:
    """The latest snapshot of every trainable player."""
    return frozenset(league.latest_snapshots().values())


def retirements(league: League) -> tuple[str, ...]:
    """What ``league`` should retire now under its ``max_snapshots`` budget."""
    return select_retirements(
        league.snapshots.values(), league.cfg.max_snapshots, protected_snapshots(league)
    )
