"""Which snapshots leave the league when it outgrows its budget.

Rule: while there are more than ``max_snapshots`` snapshots, retire the one
with the **lowest current rating** (ties: the older one, by iteration then
version, then id). The weakest snapshot is the one PFSP would least often need
to revisit, and the rating covers every snapshot on one scale, unlike the
payoff table which only knows recent pairs.

In a game of several sides (predators and prey) ratings are compared within a
side only, and the snapshot retired is taken from the side holding the most
snapshots (ties: the side named last). Across sides the ratings say which side
the game favours, not which snapshot is weak: on simple_tag every predator
outscores every prey, so a league-wide "lowest first" retired every prey
snapshot but the protected latest while the predators' filled the budget, and
the predators' PFSP had one prey left to play.

Never retired: trainable players (they are not snapshots at all) and the latest
snapshot of every trainable player. Protecting mains' latest snapshots is what
the league relies on (the main's PFSP and its forgetting check need its most
recent self); protecting exploiters' latest as well avoids retiring a snapshot
taken this very iteration on the strength of a rating it has not yet had a
game to earn. When protected snapshots alone exceed the budget, the league
stays over budget rather than break that rule.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable

from league.core.ids import is_snapshot_id, side_of
from league.core.league import League
from league.core.model import Snapshot


def select_retirements(
    snapshots: Iterable[Snapshot], budget: int, protected: Collection[str] = ()
) -> tuple[str, ...]:
    """Ids to retire so that at most ``budget`` snapshots remain (as far as
    ``protected`` allows): from the fullest side, lowest rating first. Pure:
    changes nothing."""
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    snaps = [s for s in snapshots if is_snapshot_id(s.id)]
    excess = len(snaps) - budget
    if excess <= 0:
        return ()
    held = Counter(side_of(s.id) for s in snaps)
    candidates: dict[str, list[Snapshot]] = defaultdict(list)
    for s in sorted(snaps, key=lambda s: (s.rating, s.iteration, s.version, s.id), reverse=True):
        if s.id not in protected:
            candidates[side_of(s.id)].append(s)  # weakest last: popped first
    chosen: list[str] = []
    for _ in range(excess):
        sides = [side for side, queue in candidates.items() if queue]
        if not sides:
            break
        side = max(sides, key=lambda side: (held[side], side))
        chosen.append(candidates[side].pop().id)
        held[side] -= 1
    return tuple(chosen)


def protected_snapshots(league: League) -> frozenset[str]:
    """The latest snapshot of every trainable player."""
    return frozenset(league.latest_snapshots().values())


def retirements(league: League) -> tuple[str, ...]:
    """What ``league`` should retire now under its ``max_snapshots`` budget."""
    return select_retirements(
        league.snapshots.values(), league.cfg.max_snapshots, protected_snapshots(league)
    )
