"""Ratings for every league module: Elo for two-player games, a Bayesian skill
rating over team rankings for more seats or teams (`make_ratings` picks).

Ratings complement the payoff table: the payoff only knows pairs that met
recently, the rating puts every player and snapshot on one scale (for
retirement, reports and snapshot metadata). Updates come from every match
record; a draw scores 0.5 for both sides, so it pulls ratings together and
never counts as a loss.

Within one record all pairwise deltas are computed from the ratings before the
record and applied together, so seat order does not matter; records are applied
in the order given. In n-player games each pair uses ``k / (n - 1)`` so one game
moves a rating about as much as a two-player game.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from league.core.match import MatchRecord, pairwise_scores, team_standings

ELO = "elo"
SKILL = "skill"
RATING_KINDS: tuple[str, ...] = ("auto", ELO, SKILL)


class EloRatings:
    """Elo rating per module id; unknown ids start at ``initial``."""

    def __init__(self, k: float = 16.0, initial: float = 1000.0, scale: float = 400.0) -> None:
        if not k > 0 or not scale > 0:
            raise ValueError(f"k and scale must be > 0, got k={k}, scale={scale}")
        self.k = k
        self.initial = initial
        self.scale = scale
        self._ratings: dict[str, float] = {}

    def rating(self, module_id: str) -> float:
        return self._ratings.get(module_id, self.initial)

    def set(self, module_id: str, rating: float) -> None:
        self._ratings[module_id] = float(rating)

    def reset(self, module_id: str, source: str | None = None) -> None:
        """Start ``module_id`` again: at the initial rating, or at ``source``'s."""
        self.set(module_id, self.initial if source is None else self.rating(source))

    def add(self, module_id: str) -> None:
        """Give a module the initial rating unless it has one."""
        self._ratings.setdefault(module_id, self.initial)

    def uncertainty(self, module_id: str) -> float | None:
        """Elo keeps no uncertainty."""
        return None

    def inherit(self, child: str, parent: str) -> float:
        """Start ``child`` at ``parent``'s rating: a snapshot is a copy of its
        player's weights, so it is as strong as the player is rated now."""
        rating = self.rating(parent)
        self._ratings[child] = rating
        return rating

    def remove(self, module_id: str) -> None:
        self._ratings.pop(module_id, None)

    def as_dict(self) -> dict[str, float]:
        return dict(self._ratings)

    def expected(self, a: str, b: str) -> float:
        """Expected score of ``a`` against ``b``."""
        diff = self.rating(b) - self.rating(a)
        return 1.0 / (1.0 + 10.0 ** (diff / self.scale))

    def update(self, records: Iterable[MatchRecord]) -> None:
        for record in records:
            pairs = pairwise_scores(record)
            if not pairs:
                continue
            k = self.k / (len(record.modules) - 1)
            delta: dict[str, float] = {}
            for a, b, score in pairs:
                change = k * (score - self.expected(a, b))
                delta[a] = delta.get(a, 0.0) + change
                delta[b] = delta.get(b, 0.0) - change
            for module_id, change in delta.items():
                self._ratings[module_id] = self.rating(module_id) + change

    def get_state(self) -> dict[str, Any]:
        return {"ratings": dict(sorted(self._ratings.items()))}

    def set_state(self, state: Mapping[str, Any]) -> None:
        if state.get("kind", ELO) != ELO:
            raise ValueError(f"ratings state is {state.get('kind')!r}, expected {ELO!r}")
        self._ratings = {str(m): float(r) for m, r in state["ratings"].items()}


class SkillRatings:
    """A Bayesian skill rating per module over team rankings (openskill's
    Plackett-Luce model, TrueSkill-like): each module has a skill ``mu`` and an
    uncertainty ``sigma``; the rating shown and used (retirement, reports) is the
    conservative ``mu - 3 sigma``, which rises as a module proves itself.

    One match is one ranking of its distinct modules (`team_standings`: a module
    that played several teams stands once, at their mean rank), so a 3-player
    or a 2v2 game updates every module at once from who finished where, not from
    pairwise results. Unknown ids start at the model's prior (mu 25, sigma 25/3).
    """

    def __init__(self) -> None:
        from openskill.models import PlackettLuce  # pure Python; imported on use

        self._model = PlackettLuce()
        self._skills: dict[str, tuple[float, float]] = {}

    @property
    def prior(self) -> tuple[float, float]:
        return float(self._model.mu), float(self._model.sigma)

    def skill(self, module_id: str) -> tuple[float, float]:
        """(mu, sigma) of a module."""
        return self._skills.get(module_id, self.prior)

    def rating(self, module_id: str) -> float:
        mu, sigma = self.skill(module_id)
        return mu - 3.0 * sigma

    def uncertainty(self, module_id: str) -> float | None:
        return self.skill(module_id)[1]

    def add(self, module_id: str) -> None:
        self._skills.setdefault(module_id, self.prior)

    def reset(self, module_id: str, source: str | None = None) -> None:
        """Start again at the prior, or as sure of it as of ``source``."""
        self._skills[module_id] = self.prior if source is None else self.skill(source)

    def inherit(self, child: str, parent: str) -> float:
        """A snapshot starts with its player's skill (see `EloRatings.inherit`)."""
        self._skills[child] = self.skill(parent)
        return self.rating(child)

    def remove(self, module_id: str) -> None:
        self._skills.pop(module_id, None)

    def as_dict(self) -> dict[str, float]:
        return {m: mu - 3.0 * sigma for m, (mu, sigma) in self._skills.items()}

    def update(self, records: Iterable[MatchRecord]) -> None:
        model = self._model
        for record in records:
            standings = team_standings(record)
            if not standings:
                continue
            teams = [[model.rating(*self.skill(m))] for m, _ in standings]
            rated = model.rate(teams, ranks=[rank for _, rank in standings])
            for (module_id, _), (player,) in zip(standings, rated, strict=True):
                self._skills[module_id] = (float(player.mu), float(player.sigma))

    def get_state(self) -> dict[str, Any]:
        return {"kind": SKILL, "skills": {m: list(v) for m, v in sorted(self._skills.items())}}

    def set_state(self, state: Mapping[str, Any]) -> None:
        if state.get("kind") != SKILL:
            raise ValueError(f"ratings state is {state.get('kind', ELO)!r}, expected {SKILL!r}")
        skills = {}
        for module_id, (mu, sigma) in state["skills"].items():
            mu, sigma = float(mu), float(sigma)
            if not (mu == mu and sigma == sigma and sigma > 0):  # NaN or non-positive
                raise ValueError(f"bad skill for {module_id!r}: {mu}, {sigma}")
            skills[str(module_id)] = (mu, sigma)
        self._skills = skills


Ratings = EloRatings | SkillRatings


def rating_kind(configured: str, two_player: bool) -> str:
    """The rating a league uses: as configured, or (auto) Elo for a two-player
    game and the skill rating for more seats or teams."""
    if configured not in RATING_KINDS:
        raise ValueError(f"ratings must be one of {RATING_KINDS}, got {configured!r}")
    if configured != "auto":
        return configured
    return ELO if two_player else SKILL


def ratings_in_state(state: Mapping[str, Any]) -> dict[str, tuple[float, float | None]]:
    """Module -> (rating, uncertainty) from a stored ratings state (`get_state` of
    either kind): Elo has no uncertainty (None); the skill rating's rating is
    mu - 3 sigma and its uncertainty sigma."""
    if state.get("kind") == SKILL:
        return {
            str(m): (float(mu) - 3.0 * float(sigma), float(sigma))
            for m, (mu, sigma) in state.get("skills", {}).items()
        }
    return {str(m): (float(r), None) for m, r in state.get("ratings", {}).items()}
