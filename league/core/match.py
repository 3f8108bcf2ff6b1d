"""The record of one finished episode, as the league sees it.

A ``MatchRecord`` is what crosses from env runners to the coordinator and into
the store's match log, so it is immutable, validated on construction and
JSON-able. Payoff and ratings consume it through ``pairwise_scores`` and
``team_standings`` so they agree on what a draw is (half a win, never a loss)
and on games with more than two seats or with teams.

Outcomes are **rankings**: every seat carries its team and the team's rank (0 is
best; equal ranks are a tie), made from the teams' returns (`team_ranks`). The
per-seat ``outcomes`` (win, draw, loss) follow from the ranks: a win for a team
alone at the top, a draw for one tied at the top, a loss for every other. Records
written before teams existed read as "every seat its own team" with ranks from
their outcomes.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["win", "draw", "loss"]
OUTCOMES: tuple[str, ...] = ("win", "draw", "loss")
_RANK = {"loss": 0, "draw": 1, "win": 2}


@dataclass(frozen=True)
class MatchRecord:
    """One episode: who sat where and how each seat did.

    The seat maps are copied (so the record cannot be changed through a dict
    the caller kept) and are left out of the hash; ``episode_id`` is unique
    anyway.
    """

    episode_id: str
    modules: Mapping[str, str] = field(hash=False)
    outcomes: Mapping[str, Outcome] = field(hash=False)
    length: int
    iteration: int
    returns: Mapping[str, float] = field(default_factory=dict, hash=False)
    """Each seat's return (chips in poker); empty in records made before returns."""
    teams: Mapping[str, str] = field(default_factory=dict, hash=False)
    """Each seat's team (default: every seat its own team, named as the seat)."""
    ranks: Mapping[str, int] = field(default_factory=dict, hash=False)
    """Each seat's team rank, 0 best, ties equal (default: from ``outcomes``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.episode_id, str) or not self.episode_id:
            raise ValueError(f"episode_id must be a non-empty str: {self.episode_id!r}")
        modules = dict(sorted(dict(self.modules).items()))
        outcomes = dict(sorted(dict(self.outcomes).items()))
        if len(modules) < 2:
            raise ValueError(f"modules needs at least two seats, got {modules}")
        if set(modules) != set(outcomes):
            raise ValueError(
                f"modules and outcomes must name the same seats: "
                f"{sorted(modules)} vs {sorted(outcomes)}"
            )
        for seat, module in modules.items():
            if not isinstance(seat, str) or not isinstance(module, str) or not module:
                raise ValueError(f"modules: bad seat/module {seat!r}: {module!r}")
        for seat, outcome in outcomes.items():
            if outcome not in OUTCOMES:
                raise ValueError(f"outcomes[{seat!r}] must be in {OUTCOMES}: {outcome!r}")
        for name in ("length", "iteration"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        returns = dict(sorted(dict(self.returns).items()))
        if returns and set(returns) != set(modules):
            raise ValueError(f"returns must name the seats {sorted(modules)}: {sorted(returns)}")
        for seat, value in returns.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
                raise ValueError(f"returns[{seat!r}] must be a number, got {value!r}")
        teams = dict(sorted(dict(self.teams).items())) or {seat: seat for seat in modules}
        if set(teams) != set(modules):
            raise ValueError(f"teams must name the seats {sorted(modules)}: {sorted(teams)}")
        if len(set(teams.values())) < 2 or not all(
            isinstance(t, str) and t for t in teams.values()
        ):
            raise ValueError(f"teams must name at least two non-empty teams: {teams}")
        ranks = dict(sorted(dict(self.ranks).items())) or ranks_from_outcomes(outcomes)
        if set(ranks) != set(modules):
            raise ValueError(f"ranks must name the seats {sorted(modules)}: {sorted(ranks)}")
        for seat, rank in ranks.items():
            if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
                raise ValueError(f"ranks[{seat!r}] must be an int >= 0, got {rank!r}")
        for seat, team in teams.items():
            mate = next(s for s, t in teams.items() if t == team)
            if modules[seat] != modules[mate] or ranks[seat] != ranks[mate]:
                raise ValueError(
                    f"seats {mate!r} and {seat!r} of team {team!r} must share module and rank"
                )
        if outcomes != outcomes_from_ranks(ranks, teams):
            raise ValueError(f"outcomes {outcomes} do not follow from ranks {ranks}")
        object.__setattr__(self, "modules", modules)
        object.__setattr__(self, "outcomes", outcomes)
        object.__setattr__(self, "returns", {k: float(v) for k, v in returns.items()})
        object.__setattr__(self, "teams", teams)
        object.__setattr__(self, "ranks", ranks)

    @classmethod
    def from_returns(
        cls,
        episode_id: str,
        modules: Mapping[str, str],
        returns: Mapping[str, float],
        length: int,
        iteration: int,
        teams: Mapping[str, str] | None = None,
    ) -> MatchRecord:
        """The record of an episode from its seats' returns: teams ranked by team
        return (`team_ranks`), outcomes from the ranks."""
        teams = dict(teams or {seat: seat for seat in modules})
        ranks = team_ranks(returns, teams)
        return cls(
            episode_id,
            modules,
            outcomes_from_ranks(ranks, teams),
            length,
            iteration,
            returns=returns,
            teams=teams,
            ranks=ranks,
        )

    def team_modules(self) -> dict[str, str]:
        """Team -> the module that played it."""
        return {team: self.modules[seat] for seat, team in self.teams.items()}

    def team_ranks(self) -> dict[str, int]:
        """Team -> its rank (0 best)."""
        return {team: self.ranks[seat] for seat, team in self.teams.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form; teams and ranks only where they say more than the
        defaults (every seat alone, ranks from outcomes), so a two-player record
        keeps its old, smaller shape."""
        data: dict[str, Any] = {
            "episode_id": self.episode_id,
            "modules": dict(self.modules),
            "outcomes": dict(self.outcomes),
            "length": self.length,
            "iteration": self.iteration,
            "returns": dict(self.returns),
        }
        if any(seat != team for seat, team in self.teams.items()):
            data["teams"] = dict(self.teams)
        if self.ranks != ranks_from_outcomes(self.outcomes):
            data["ranks"] = dict(self.ranks)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchRecord:
        return cls(
            episode_id=data["episode_id"],
            modules=data["modules"],
            outcomes=data["outcomes"],
            length=data["length"],
            iteration=data["iteration"],
            returns=data.get("returns", {}),
            teams=data.get("teams", {}),
            ranks=data.get("ranks", {}),
        )


def pairwise_scores(record: MatchRecord) -> list[tuple[str, str, float]]:
    """``(a, b, score of a vs b)`` for every pair of teams, in team order.

    Two-player games give one triple. With more teams every pair counts, scored
    by rank (a better rank wins, equal ranks draw). Pairs where the same module
    plays both teams are skipped: a module against itself says nothing about its
    strength.
    """
    modules, ranks = record.team_modules(), record.team_ranks()
    teams = list(modules)
    out: list[tuple[str, str, float]] = []
    for i, ti in enumerate(teams):
        for tj in teams[i + 1 :]:
            a, b = modules[ti], modules[tj]
            if a == b:
                continue
            ra, rb = ranks[ti], ranks[tj]
            out.append((a, b, 1.0 if ra < rb else 0.5 if ra == rb else 0.0))
    return out


def team_standings(record: MatchRecord) -> list[tuple[str, float]]:
    """``(module, rank)`` per distinct module of the match, for ratings over rankings.

    A module that played several teams (self-play) stands once, at the mean of
    their ranks; a match with one distinct module has no standings.
    """
    modules, ranks = record.team_modules(), record.team_ranks()
    by_module: dict[str, list[int]] = {}
    for team, module in modules.items():
        by_module.setdefault(module, []).append(ranks[team])
    if len(by_module) < 2:
        return []
    return [(m, sum(r) / len(r)) for m, r in by_module.items()]


def team_ranks(
    returns: Mapping[str, float], teams: Mapping[str, str] | None = None
) -> dict[str, int]:
    """Per seat: its team's rank by team return (the sum of its seats' returns),
    0 for the best; teams with equal returns share a rank (competition ranking:
    1, 2, 2, 4 -> ranks 0, 1, 1, 3)."""
    teams = teams or {seat: seat for seat in returns}
    rank = _competition_ranks(_team_totals(returns, teams))
    return {seat: rank[teams[seat]] for seat in returns}


def _team_totals(returns: Mapping[str, float], teams: Mapping[str, str]) -> dict[str, float]:
    """Team -> the sum of its seats' returns."""
    totals: dict[str, float] = {}
    for seat, value in returns.items():
        totals[teams[seat]] = totals.get(teams[seat], 0.0) + float(value)
    return totals


def _competition_ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """Key -> how many keys scored more (0 best; equal scores share a rank)."""
    return {key: sum(1 for other in scores.values() if other > v) for key, v in scores.items()}


def ranked_within_sides(
    records: list[MatchRecord], side_of_seat: Mapping[str, str]
) -> list[MatchRecord]:
    """Records of a game of several sides with ranks that compare each team's return
    with its own side's, not with the other sides' raw returns.

    Sides differ in rewards (simple_tag's predators outscore the prey in every game),
    so ranks by raw team return make every cross-side pair a certain win for one
    side: payoff, PFSP and the snapshot rule then see win rates of 0 and 1 only. Here
    each team scores its return standardized over the teams of its side in
    ``records`` (one iteration's matches): a team that did better than its side
    usually does ranks above one that did worse than its side usually does. Records
    whose teams all belong to one side, and sides with fewer than two team returns in
    ``records``, keep their ranks. Returns are kept as played.
    """
    played = []
    by_side: dict[str, list[float]] = {}
    for record in records:
        sides = _team_sides(record, side_of_seat)
        totals = _team_totals(record.returns, record.teams) if sides else {}
        for team, total in totals.items():
            by_side.setdefault(sides[team], []).append(total)
        played.append((record, sides, totals))
    scale: dict[str, tuple[float, float]] = {}
    for side, values in by_side.items():
        if len(values) >= 2:
            scale[side] = (statistics.fmean(values), statistics.pstdev(values) or 1.0)
    out = []
    for record, sides, totals in played:
        if len(set(sides.values())) < 2 or not all(s in scale for s in sides.values()):
            out.append(record)
            continue
        rank = _competition_ranks(
            {
                team: (total - scale[sides[team]][0]) / scale[sides[team]][1]
                for team, total in totals.items()
            }
        )
        ranks = {seat: rank[team] for seat, team in record.teams.items()}
        outcomes = outcomes_from_ranks(ranks, record.teams)
        out.append(dataclasses.replace(record, outcomes=outcomes, ranks=ranks))
    return out


def _team_sides(record: MatchRecord, side_of_seat: Mapping[str, str]) -> dict[str, str]:
    """Team -> its side; no team's side in a record without returns (kept as it is)."""
    if not record.returns:
        return {}
    return {team: side_of_seat[seat] for seat, team in record.teams.items()}


def outcomes_from_ranks(
    ranks: Mapping[str, int], teams: Mapping[str, str] | None = None
) -> dict[str, Outcome]:
    """Per seat: win if its team alone has the best rank, draw if tied there, else loss."""
    teams = teams or {seat: seat for seat in ranks}
    best = min(ranks.values())
    at_best = len({teams[seat] for seat, rank in ranks.items() if rank == best})
    return {
        seat: "loss" if rank != best else "win" if at_best == 1 else "draw"
        for seat, rank in ranks.items()
    }


def ranks_from_outcomes(outcomes: Mapping[str, Outcome]) -> dict[str, int]:
    """Ranks of a record made before ranks: winners and drawers 0, losers 1."""
    return {seat: 0 if outcome in ("win", "draw") else 1 for seat, outcome in outcomes.items()}


def outcomes_from_returns(returns: Mapping[str, float]) -> dict[str, Outcome]:
    """Per seat: win if its return beats every other seat's, loss if below the best."""
    outcomes: dict[str, Outcome] = {}
    for seat, value in returns.items():
        best_other = max(v for s, v in returns.items() if s != seat)
        outcomes[seat] = "win" if value > best_other else "loss" if value < best_other else "draw"
    return outcomes
