"""Matchmaking plans for env runners, and the active set they are built on.

Env runners hold the trainable players plus a bounded *active set* of frozen
snapshots (and the league's reference opponents, always); a mapping function that names any other module crashes the env
step. So once per iteration (``next_plan``) each role's opponent mix is computed
on the full league as branches (``league.core.roles.Branch``), the active set is
chosen from them, and the plan restricts each branch to that set. Restricting
branch by branch (rather than dropping inactive opponents from the merged
distribution) keeps each role's mix intact: a main still gets its 35/50/15
split, PFSP just runs over fewer candidates, exactly as on a league view that
holds only the active set.

The plan is a small frozen object of tuples: cheap to pickle and broadcast, and
it cannot drift from what the coordinator validated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from league.core.ids import is_frozen_id, is_player_id, is_reference_id
from league.core.league import League
from league.core.roles import Branch, mix
from league.core.sampling import sample_index


def _check_distribution(name: str, probs: Sequence[float]) -> None:
    if not probs:
        raise ValueError(f"{name}: empty distribution")
    if any(not math.isfinite(p) or p < 0.0 for p in probs):
        raise ValueError(f"{name}: probabilities must be finite and >= 0: {probs}")
    if not math.isclose(math.fsum(probs), 1.0, abs_tol=1e-9):
        raise ValueError(f"{name}: probabilities must sum to 1: {probs}")


@dataclass(frozen=True)
class MatchmakingPlan:
    """Per episode: which trainable player learns, and against whom.

    Invariant (checked on construction): every module named is a trainable
    player or a member of ``active_set``.
    """

    learners: tuple[str, ...]
    learner_probs: tuple[float, ...]
    opponents: tuple[tuple[str, ...], ...]
    opponent_probs: tuple[tuple[float, ...], ...]
    active_set: tuple[str, ...] = ()
    iteration: int = 0

    def __post_init__(self) -> None:
        if len(self.learners) != len(self.learner_probs):
            raise ValueError("learners and learner_probs differ in length")
        if len(self.learners) != len(self.opponents) or len(self.opponents) != len(
            self.opponent_probs
        ):
            raise ValueError("need one opponent distribution per learner")
        if len(set(self.learners)) != len(self.learners):
            raise ValueError(f"duplicate learners: {self.learners}")
        if len(set(self.active_set)) != len(self.active_set):
            raise ValueError(f"duplicate active-set members: {self.active_set}")
        for learner in self.learners:
            if not is_player_id(learner):
                raise ValueError(f"learner is not a trainable player id: {learner!r}")
        for sid in self.active_set:
            if not is_frozen_id(sid):
                raise ValueError(
                    f"active-set member is not a snapshot or reference opponent id: {sid!r}"
                )
        _check_distribution("learner_probs", self.learner_probs)
        allowed = set(self.learners) | set(self.active_set)
        for learner, ids, probs in zip(
            self.learners, self.opponents, self.opponent_probs, strict=True
        ):
            if len(ids) != len(probs):
                raise ValueError(f"{learner}: opponents and probs differ in length")
            _check_distribution(f"opponent_probs[{learner}]", probs)
            outside = sorted(set(ids) - allowed)
            if outside:
                raise ValueError(f"{learner}: opponents outside trainable+active set: {outside}")

    def module_ids(self) -> frozenset[str]:
        """Every module an env runner must hold to follow this plan."""
        return frozenset(self.learners) | frozenset(self.active_set)

    def opponent_distribution(self, learner: str) -> dict[str, float]:
        i = self.learners.index(learner)
        return dict(zip(self.opponents[i], self.opponent_probs[i], strict=True))

    def sample_learner(self, rng: np.random.Generator) -> str:
        return self.learners[sample_index(self.learner_probs, rng)]

    def sample_opponent(self, learner: str, rng: np.random.Generator) -> str:
        i = self.learners.index(learner)
        return self.opponents[i][sample_index(self.opponent_probs[i], rng)]

    def assign_seats(self, seats: Sequence[str], rng: np.random.Generator) -> dict[str, str]:
        """Seat (agent id) -> module id for one episode.

        The learner takes a uniformly random seat so it learns both sides of
        games with a first-move advantage; in games with more than two seats
        each other seat draws its own opponent.
        """
        if len(seats) < 2 or len(set(seats)) != len(seats):
            raise ValueError(f"need at least two distinct seats, got {list(seats)}")
        learner = self.sample_learner(rng)
        learner_seat = int(rng.integers(len(seats)))
        return {
            seat: learner if k == learner_seat else self.sample_opponent(learner, rng)
            for k, seat in enumerate(seats)
        }


def opponent_branches(league: League) -> dict[str, list[Branch]]:
    """Every player's opponent mix on the full league: computed once per iteration,
    then used both to choose the active set and to build the plan on it."""
    view = league.view()
    return {pid: league.role(pid).opponent_branches(view) for pid in league.players}


def next_plan(
    league: League,
    rng: np.random.Generator,
    current_active: Iterable[str] = (),
    *,
    iteration: int = 0,
) -> tuple[tuple[str, ...], MatchmakingPlan]:
    """The active set for the next iteration and the plan on it."""
    branches = opponent_branches(league)
    active = choose_active_set(league, rng, current_active, branches=branches)
    return active, build_plan(league, active, iteration=iteration, branches=branches)


def build_plan(
    league: League,
    active_set: Iterable[str],
    *,
    iteration: int = 0,
    learner_weights: Mapping[str, float] | None = None,
    branches: Mapping[str, list[Branch]] | None = None,
) -> MatchmakingPlan:
    """The plan for the current league with ``active_set`` loaded on runners.

    Each role's branches are restricted to the trainable players and the active
    set: a branch keeps its share (a main still gets its 35/50/15 split) and PFSP
    just runs over fewer candidates. Learners are weighted by the config's
    ``main_learner_share`` unless ``learner_weights`` says otherwise. No
    randomness: the plan is an exact function of the league, and env runners
    sample from it.
    """
    active = tuple(active_set)
    snapshots = [m for m in active if not is_reference_id(m)]
    if len(snapshots) > league.cfg.active_set_size:
        raise ValueError(
            f"active set has {len(snapshots)} snapshots, more than active_set_size="
            f"{league.cfg.active_set_size}"
        )
    unknown = sorted(set(active) - set(league.snapshots) - set(league.references))
    if unknown:
        raise ValueError(f"active set names unknown snapshots: {unknown}")
    branches = branches if branches is not None else opponent_branches(league)
    learners = tuple(league.players)
    configured = league.cfg.learner_weights()
    weights = [configured.get(p, 0.0) for p in learners]
    if learner_weights is not None:
        unknown = sorted(set(learner_weights) - set(learners))
        if unknown:
            raise ValueError(f"learner_weights names unknown players: {unknown}")
        weights = [float(learner_weights.get(p, 0.0)) for p in learners]
        if any(w < 0 or not math.isfinite(w) for w in weights) or sum(weights) <= 0:
            raise ValueError(f"learner_weights must be >= 0 with a positive sum: {weights}")
    total = math.fsum(weights)
    allowed = set(learners) | set(active)
    opponents: list[tuple[str, ...]] = []
    probs: list[tuple[float, ...]] = []
    for pid in learners:
        dist = mix(branches[pid], allowed)
        norm = math.fsum(dist.values())
        opponents.append(tuple(dist))
        probs.append(tuple(p / norm for p in dist.values()))
    return MatchmakingPlan(
        learners=learners,
        learner_probs=tuple(w / total for w in weights),
        opponents=tuple(opponents),
        opponent_probs=tuple(probs),
        active_set=active,
        iteration=int(iteration),
    )


def snapshot_need(
    league: League, branches: Mapping[str, list[Branch]] | None = None
) -> dict[str, float]:
    """Snapshot -> the highest probability with which any player's role would
    pick it on the full league: how much matchmaking wants it loaded."""
    branches = branches if branches is not None else opponent_branches(league)
    need = dict.fromkeys(league.snapshots, 0.0)
    for pid in league.players:
        for opponent, p in mix(branches[pid]).items():
            if opponent in need:
                need[opponent] = max(need[opponent], p)
    return need


def choose_active_set(
    league: League,
    rng: np.random.Generator,
    current: Iterable[str] = (),
    *,
    branches: Mapping[str, list[Branch]] | None = None,
) -> tuple[str, ...]:
    """The league's reference opponents (always) and at most ``active_set_size``
    snapshots for env runners to hold.

    Prefers the snapshots matchmaking needs most (``snapshot_need``) but keeps
    churn low, because every change is an add/remove_module on all runners:
    retired members leave, empty slots are filled with the most needed
    outsiders, and then at most ``active_set_max_swaps`` members are replaced,
    each only if an outsider's need beats the member's by the relative
    ``active_set_hysteresis`` margin. ``rng`` only breaks ties. Members keep
    their positions; newcomers take the freed slot or are appended.
    """
    cfg = league.cfg
    need = snapshot_need(league, branches)
    tiebreak = {sid: float(u) for sid, u in zip(need, rng.random(len(need)), strict=True)}

    def key(sid: str) -> tuple[float, float]:
        return (need[sid], tiebreak[sid])

    members = list(dict.fromkeys(s for s in current if s in need))
    while len(members) > cfg.active_set_size:
        members.remove(min(members, key=key))
    outsiders = sorted((s for s in need if s not in members), key=key, reverse=True)
    while len(members) < cfg.active_set_size and outsiders:
        members.append(outsiders.pop(0))
    for _ in range(cfg.active_set_max_swaps):
        if not outsiders or not members:
            break
        worst = min(members, key=key)
        best = outsiders[0]
        if need[best] <= need[worst] * (1.0 + cfg.active_set_hysteresis):
            break
        members[members.index(worst)] = outsiders.pop(0)
    # Reference opponents are small and scripted: always loaded, outside the budget.
    return (*league.references, *members)
