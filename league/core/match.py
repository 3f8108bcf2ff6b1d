"""The record of one finished episode, as the league sees it.

A ``MatchRecord`` is what crosses from env runners to the coordinator and into
the store's match log, so it is immutable, validated on construction and
JSON-able. Payoff and ratings consume it through ``pairwise_scores`` so they
agree on what a draw is (half a win, never a loss) and on n-player games.
"""

from __future__ import annotations

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
        object.__setattr__(self, "modules", modules)
        object.__setattr__(self, "outcomes", outcomes)
        object.__setattr__(self, "returns", {k: float(v) for k, v in returns.items()})

    def to_dict(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "modules": dict(self.modules),
            "outcomes": dict(self.outcomes),
            "length": self.length,
            "iteration": self.iteration,
            "returns": dict(self.returns),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchRecord:
        return cls(
            episode_id=data["episode_id"],
            modules=data["modules"],
            outcomes=data["outcomes"],
            length=data["length"],
            iteration=data["iteration"],
            returns=data.get("returns", {}),
        )


def pairwise_scores(record: MatchRecord) -> list[tuple[str, str, float]]:
    """``(a, b, score of a vs b)`` for every pair of seats, in seat order.

    Two-player games give one triple. For n players every pair counts, scored
    by outcome rank (win > draw > loss, equal ranks are a draw). Pairs where
    the same module sits on both sides are skipped: a module against itself
    says nothing about its strength.
    """
    seats = list(record.modules)
    out: list[tuple[str, str, float]] = []
    for i, si in enumerate(seats):
        for sj in seats[i + 1 :]:
            a, b = record.modules[si], record.modules[sj]
            if a == b:
                continue
            ra, rb = _RANK[record.outcomes[si]], _RANK[record.outcomes[sj]]
            out.append((a, b, 1.0 if ra > rb else 0.5 if ra == rb else 0.0))
    return out


def outcomes_from_returns(returns: Mapping[str, float]) -> dict[str, Outcome]:
    """Per seat: win if its return beats every other seat's, loss if below the best."""
    outcomes: dict[str, Outcome] = {}
    for seat, value in returns.items():
        best_other = max(v for s, v in returns.items() if s != seat)
        outcomes[seat] = "win" if value > best_other else "loss" if value < best_other else "draw"
    return outcomes
