"""Seats, teams and sides: who sits where in a match (DESIGN.md, "Seats, teams, sides").

- A **seat** is one agent name of the game (`player_0`, `adversary_1`); a match
  fills every seat.
- A **team** is the seats that win or lose together; by default every seat is its
  own team. One module plays every seat of its team in a match (parameter
  sharing), so a team is also the unit of matchmaking, of outcomes (a team's rank)
  and of the payoff table (team against team).
- A **side** is the seats with the same observation and action spaces, detected
  from the spaces: a symmetric game has one side, predator-prey has two. Each side
  has its own players, snapshots and ratings, and module ids carry the side when
  there is more than one (`league.core.ids`). A team never spans two sides.

`SeatLayout` is pure data (picklable, JSON-able through `to_dict`): the league,
the matchmaking plan and the env runners all read the same one.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SIDE_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_TRAILING_INDEX = re.compile(r"_?[0-9]+$")
MAX_TEAMS = 1024


class SeatLayoutError(ValueError):
    """A `teams` setting or a seat list the league cannot use."""


@dataclass(frozen=True)
class Team:
    """Seats that win or lose together; all on one side."""

    name: str
    side: str
    seats: tuple[str, ...]


@dataclass(frozen=True)
class SeatLayout:
    """Every seat of a game, grouped into teams and sides (see the module doc).

    `sides` lists the side names in order; a game with one side has the single
    side `""`, so its module ids carry no side (`main_0`, as in two-player games).
    """

    seats: tuple[str, ...]
    teams: tuple[Team, ...]
    sides: tuple[str, ...] = ("",)

    def __post_init__(self) -> None:
        if len(self.seats) < 2 or len(set(self.seats)) != len(self.seats):
            raise SeatLayoutError(f"need at least two distinct seats, got {list(self.seats)}")
        if len(self.teams) < 2:
            raise SeatLayoutError(
                f"need at least two teams, got {len(self.teams)}: "
                + ", ".join(f"{t.name} {list(t.seats)}" for t in self.teams)
            )
        seen: dict[str, str] = {}
        for team in self.teams:
            if not team.seats:
                raise SeatLayoutError(f"team {team.name!r} has no seats")
            if team.side not in self.sides:
                raise SeatLayoutError(f"team {team.name!r} is on unknown side {team.side!r}")
            for seat in team.seats:
                if seat in seen:
                    raise SeatLayoutError(
                        f"seat {seat!r} is in two teams: {seen[seat]!r} and {team.name!r}"
                    )
                seen[seat] = team.name
        if set(seen) != set(self.seats):
            raise SeatLayoutError(
                f"teams must cover every seat exactly once; missing {sorted(set(self.seats) - set(seen))}"
            )
        if len({t.name for t in self.teams}) != len(self.teams):
            raise SeatLayoutError(f"team names repeat: {[t.name for t in self.teams]}")
        if len(self.sides) != len(set(self.sides)) or (
            len(self.sides) > 1 and not all(SIDE_NAME_RE.match(s) for s in self.sides)
        ):
            raise SeatLayoutError(f"bad side names {list(self.sides)}")

    # ---- construction ---------------------------------------------------------

    @classmethod
    def free_for_all(cls, seats: Sequence[str]) -> SeatLayout:
        """Every seat its own team, one side: the layout of a symmetric game."""
        return cls(tuple(seats), tuple(Team(s, "", (s,)) for s in seats))

    @classmethod
    def from_game(
        cls,
        seats: Sequence[str],
        space_keys: Mapping[str, Hashable],
        teams: Mapping[str, Sequence[str]] | None = None,
    ) -> SeatLayout:
        """The layout of a game: sides from its seats' spaces (`space_keys`: equal
        keys, equal spaces), teams from `teams` (team name -> seat names or
        fnmatch patterns such as `red_*`); seats no team names play alone."""
        seats = tuple(seats)
        if len(seats) < 2:
            raise SeatLayoutError(f"the game has {len(seats)} seat(s); a league needs two or more")
        missing = [s for s in seats if s not in space_keys]
        if missing:
            raise SeatLayoutError(f"no spaces given for seats {missing}")
        groups: dict[Hashable, list[str]] = {}
        for seat in seats:
            groups.setdefault(space_keys[seat], []).append(seat)
        side_names = _side_names(list(groups.values()))
        side_of = {
            seat: name
            for name, group in zip(side_names, groups.values(), strict=True)
            for seat in group
        }
        members = _team_members(seats, teams or {})
        built: list[Team] = []
        for name, team_seats in members.items():
            sides = {side_of[s] for s in team_seats}
            if len(sides) > 1:
                detail = ", ".join(f"{s} ({side_of[s] or 'side 0'})" for s in team_seats)
                raise SeatLayoutError(
                    f"teams: team {name!r} mixes seats with different observation or action "
                    f"spaces: {detail}; one module plays a whole team"
                )
            built.append(Team(name, sides.pop(), tuple(team_seats)))
        if len(built) < 2:
            raise SeatLayoutError(
                f"teams: {len(built)} team(s) ({', '.join(t.name for t in built)}); a match "
                "needs at least two teams"
            )
        if len(built) > MAX_TEAMS:
            raise SeatLayoutError(f"teams: {len(built)} teams; at most {MAX_TEAMS}")
        return cls(seats, tuple(built), tuple(side_names))

    # ---- reading ----------------------------------------------------------------

    @property
    def multi_side(self) -> bool:
        return len(self.sides) > 1

    @property
    def two_player(self) -> bool:
        """Two teams of one seat each: the classic two-player game (Elo, Nash)."""
        return len(self.teams) == 2 and all(len(t.seats) == 1 for t in self.teams)

    def team_of(self, seat: str) -> Team:
        for team in self.teams:
            if seat in team.seats:
                return team
        raise KeyError(f"unknown seat {seat!r}")

    def side_of(self, seat: str) -> str:
        return self.team_of(seat).side

    def teams_of_side(self, side: str) -> tuple[Team, ...]:
        return tuple(t for t in self.teams if t.side == side)

    def seats_of_side(self, side: str) -> tuple[str, ...]:
        return tuple(s for t in self.teams_of_side(side) for s in t.seats)

    def slot(self, seat: str) -> int:
        """The seat's index within its team (0 for a team of one)."""
        return self.team_of(seat).seats.index(seat)

    def opponent_sides(self, side: str) -> tuple[str, ...]:
        """The sides whose teams a player of `side` meets in a match: every other
        side, and its own when it has more than one team."""
        own = len(self.teams_of_side(side)) > 1
        return tuple(s for s in self.sides if s != side or own)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seats": list(self.seats),
            "sides": list(self.sides),
            "teams": [{"name": t.name, "side": t.side, "seats": list(t.seats)} for t in self.teams],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SeatLayout:
        return cls(
            tuple(data["seats"]),
            tuple(Team(t["name"], t["side"], tuple(t["seats"])) for t in data["teams"]),
            tuple(data["sides"]),
        )


def _team_members(
    seats: tuple[str, ...], teams: Mapping[str, Sequence[str]]
) -> dict[str, list[str]]:
    """Team name -> its seats, in seat order; every seat not named forms its own team."""
    if not isinstance(teams, Mapping):
        raise SeatLayoutError(
            f"teams must map team names to seat lists, got {type(teams).__name__}"
        )
    owner: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    for name, patterns in teams.items():
        if not isinstance(name, str) or not name:
            raise SeatLayoutError(f"teams: a team name must be a non-empty string, got {name!r}")
        if isinstance(patterns, str) or not isinstance(patterns, Sequence) or not patterns:
            raise SeatLayoutError(f"teams: team {name!r} must list its seats, got {patterns!r}")
        chosen: list[str] = []
        for pattern in patterns:
            if not isinstance(pattern, str):
                raise SeatLayoutError(
                    f"teams: team {name!r}: seat names are strings, got {pattern!r}"
                )
            matched = [s for s in seats if fnmatch.fnmatchcase(s, pattern)]
            if not matched:
                raise SeatLayoutError(
                    f"teams: team {name!r} names seat {pattern!r}, which the game lacks "
                    f"(seats: {', '.join(seats)})"
                )
            chosen += [s for s in matched if s not in chosen]
        for seat in chosen:
            if seat in owner:
                raise SeatLayoutError(
                    f"teams: seat {seat!r} is in two teams, {owner[seat]!r} and {name!r}"
                )
            owner[seat] = name
        members[name] = chosen
    for seat in seats:
        if seat not in owner:
            if seat in members:
                raise SeatLayoutError(f"teams: team name {seat!r} is also a seat of another team")
            members[seat] = [seat]
    order = {seat: i for i, seat in enumerate(seats)}
    return {
        name: sorted(team, key=order.__getitem__)
        for name, team in sorted(members.items(), key=lambda kv: min(order[s] for s in kv[1]))
    }


def _side_names(groups: list[list[str]]) -> list[str]:
    """One side: `""`. Several: each group's common seat stem (`adversary_0` ->
    `adversary`) when the stems differ and are usable in module ids, else `side<k>`."""
    if len(groups) == 1:
        return [""]
    stems = []
    for group in groups:
        names = {_TRAILING_INDEX.sub("", seat).lower() for seat in group}
        stem = names.pop() if len(names) == 1 else ""
        stems.append(re.sub(r"[^a-z0-9_]", "_", stem))
    if len(set(stems)) == len(stems) and all(SIDE_NAME_RE.match(s) for s in stems):
        return stems
    return [f"side{k}" for k in range(len(groups))]
