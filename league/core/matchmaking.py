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

from league.core.ids import is_frozen_id, is_player_id, is_reference_id, side_of
from league.core.league import League
from league.core.roles import Branch, mix
from league.core.sampling import sample_index
from league.core.seats import SeatLayout


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

    ``opponents[i]`` / ``opponent_probs[i]`` are learner ``i``'s opponent mix on
    its first opponent side (its own side in a symmetric game); with sides (``layout.sides``) ``side_opponents[i][k]`` and
    ``side_opponent_probs[i][k]`` give its mix on side ``k`` (empty where it never
    meets that side). A plan built without a layout fills the seats it is given,
    every seat its own team.

    Invariant (checked on construction): every module named is a trainable
    player or a member of ``active_set``.
    """

    learners: tuple[str, ...]
    learner_probs: tuple[float, ...]
    opponents: tuple[tuple[str, ...], ...]
    opponent_probs: tuple[tuple[float, ...], ...]
    active_set: tuple[str, ...] = ()
    iteration: int = 0
    layout: SeatLayout | None = None
    side_opponents: tuple[tuple[tuple[str, ...], ...], ...] = ()
    side_opponent_probs: tuple[tuple[tuple[float, ...], ...], ...] = ()

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
            _check_mix(learner, ids, probs, allowed)
        if self.layout is not None and self.layout.multi_side:
            sides = len(self.layout.sides)
            if len(self.side_opponents) != len(self.learners) or any(
                len(row) != sides for row in self.side_opponents
            ):
                raise ValueError("side_opponents needs one row per learner, one mix per side")
            for learner, row, prob_row in zip(
                self.learners, self.side_opponents, self.side_opponent_probs, strict=True
            ):
                wanted = set(self.layout.opponent_sides(side_of(learner)))
                for side, ids, probs in zip(self.layout.sides, row, prob_row, strict=True):
                    if side in wanted:
                        _check_mix(f"{learner} on side {side!r}", ids, probs, allowed)
                        wrong = [m for m in ids if side_of(m) != side and not is_reference_id(m)]
                        if wrong:
                            raise ValueError(f"{learner}: {wrong} do not play side {side!r}")

    def module_ids(self) -> frozenset[str]:
        """Every module an env runner must hold to follow this plan."""
        return frozenset(self.learners) | frozenset(self.active_set)

    def _mix(self, learner: str, side: str | None) -> tuple[tuple[str, ...], tuple[float, ...]]:
        i = self.learners.index(learner)
        if side is None or self.layout is None or not self.layout.multi_side:
            return self.opponents[i], self.opponent_probs[i]
        k = self.layout.sides.index(side)
        return self.side_opponents[i][k], self.side_opponent_probs[i][k]

    def opponent_distribution(self, learner: str, side: str | None = None) -> dict[str, float]:
        ids, probs = self._mix(learner, side)
        return dict(zip(ids, probs, strict=True))

    def sample_learner(self, rng: np.random.Generator) -> str:
        return self.learners[sample_index(self.learner_probs, rng)]

    def sample_opponent(
        self, learner: str, rng: np.random.Generator, side: str | None = None
    ) -> str:
        ids, probs = self._mix(learner, side)
        return ids[sample_index(probs, rng)]

    def assign_seats(self, seats: Sequence[str] | None, rng: np.random.Generator) -> dict[str, str]:
        """Seat (agent id) -> module id for one episode.

        The learner takes a uniformly random team of its side (so it learns every
        seat of games with a first-move advantage) and plays all of its seats; every
        other team draws its own opponent from the learner's mix on that team's
        side, and that module plays all of the team's seats. Without a layout,
        ``seats`` are a symmetric game's seats, each its own team.
        """
        layout = self.layout
        if seats is not None and (layout is None or tuple(seats) != layout.seats):
            # A symmetric free-for-all is fixed by its seat count: any names will do.
            if layout is not None and layout != SeatLayout.free_for_all(layout.seats):
                raise ValueError(f"seats {list(seats)} are not the plan's {list(layout.seats)}")
            if len(seats) < 2 or len(set(seats)) != len(seats):
                raise ValueError(f"need at least two distinct seats, got {list(seats)}")
            layout = SeatLayout.free_for_all(tuple(seats))
        if layout is None:
            raise ValueError("a plan without a layout needs the seats")
        learner = self.sample_learner(rng)
        own = layout.teams_of_side(side_of(learner))
        learner_team = own[int(rng.integers(len(own)))]
        assignment: dict[str, str] = {}
        for team in layout.teams:
            if team is learner_team:
                module = learner
            else:
                module = self.sample_opponent(learner, rng, team.side)
            for seat in team.seats:
                assignment[seat] = module
        return {seat: assignment[seat] for seat in layout.seats}


def _check_mix(name: str, ids: Sequence[str], probs: Sequence[float], allowed: set[str]) -> None:
    if len(ids) != len(probs):
        raise ValueError(f"{name}: opponents and probs differ in length")
    _check_distribution(f"opponent_probs[{name}]", probs)
    outside = sorted(set(ids) - allowed)
    if outside:
        raise ValueError(f"{name}: opponents outside trainable+active set: {outside}")


def opponent_branches(league: League) -> dict[tuple[str, str], list[Branch]]:
    """Every player's opponent mix on every side it meets, on the full league:
    computed once per iteration, then used both to choose the active set and to
    build the plan on it."""
    view = league.view()
    out: dict[tuple[str, str], list[Branch]] = {}
    for pid in league.players:
        role = league.role(pid)
        for side in role.opponent_sides(view):
            out[(pid, side)] = role.opponent_branches(view, side)
    return out


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
    branches: Mapping[tuple[str, str], list[Branch]] | None = None,
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
    configured = league.cfg.learner_weights(league.layout.sides)
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
    layout = league.layout

    def restricted(pid: str, side: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
        if (pid, side) not in branches:
            return (), ()
        dist = mix(branches[(pid, side)], allowed)
        norm = math.fsum(dist.values())
        return tuple(dist), tuple(p / norm for p in dist.values())

    own = [restricted(pid, layout.opponent_sides(side_of(pid))[0]) for pid in learners]
    per_side = [[restricted(pid, side) for side in layout.sides] for pid in learners]
    multi = layout.multi_side
    return MatchmakingPlan(
        learners=learners,
        learner_probs=tuple(w / total for w in weights),
        opponents=tuple(ids for ids, _ in own),
        opponent_probs=tuple(p for _, p in own),
        active_set=active,
        iteration=int(iteration),
        layout=layout,
        side_opponents=tuple(tuple(ids for ids, _ in row) for row in per_side) if multi else (),
        side_opponent_probs=tuple(tuple(p for _, p in row) for row in per_side) if multi else (),
    )


def snapshot_need(
    league: League, branches: Mapping[tuple[str, str], list[Branch]] | None = None
) -> dict[str, float]:
    """Snapshot -> the highest probability with which any player's role would
    pick it on the full league: how much matchmaking wants it loaded."""
    branches = branches if branches is not None else opponent_branches(league)
    need = dict.fromkeys(league.snapshots, 0.0)
    for player_branches in branches.values():
        for opponent, p in mix(player_branches).items():
            if opponent in need:
                need[opponent] = max(need[opponent], p)
    return need


def choose_active_set(
    league: League,
    rng: np.random.Generator,
    current: Iterable[str] = (),
    *,
    branches: Mapping[tuple[str, str], list[Branch]] | None = None,
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
