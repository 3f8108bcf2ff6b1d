"""The terminal lines of an iteration (no Ray): the league line shows the best rated
of every side, the evaluation line names each seat or team it scored."""

from __future__ import annotations

from league.core.outcomes import SeatRecord
from league.run import IterationRecord, LeagueRecord
from league.training.sinks import format_evaluation, format_league


def _record(ratings: dict[str, float]) -> IterationRecord:
    league = LeagueRecord(
        size=len(ratings),
        active_set=[],
        matches=10,
        new_snapshots=[],
        retired=[],
        ratings=ratings,
        role_scores={},
    )
    return IterationRecord(iteration=1, env_steps=100, seconds=1.0, league=league)


def _top(line: str) -> list[str]:
    top = line.split("| top ")[1].split(" |")[0]
    return [item.rsplit(" ", 1)[0] for item in top.split(", ")]


def test_the_league_line_shows_the_best_rated_of_every_side():
    # Every predator outrates every prey: one list of four would hold predators only.
    ratings = {f"adversary.main_0@{v}": 30.0 + v for v in range(4)}
    ratings |= {f"agent.main_0@{v}": 10.0 + v for v in range(4)}
    top = _top(format_league(_record(ratings), active_set_size=8))
    assert top == ["adversary.main_0@3", "adversary.main_0@2", "agent.main_0@3", "agent.main_0@2"]


def test_one_side_keeps_the_best_four():
    ratings = {f"main_0@{v}": 1000.0 + v for v in range(6)}
    top = _top(format_league(_record(ratings), active_set_size=8))
    assert top == ["main_0@5", "main_0@4", "main_0@3", "main_0@2"]


def test_the_evaluation_line_names_each_seat_or_team():
    record = _record({})
    record.eval = {"random": [SeatRecord("ns", 3, 0, 1), SeatRecord("ew", 1, 1, 2)]}
    line = format_evaluation(record)
    assert line == "eval (greedy): vs random ns W0.75 D0.00 L0.25 / ew W0.25 D0.25 L0.50"
