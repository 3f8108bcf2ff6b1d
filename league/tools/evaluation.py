"""Head-to-head games between policies through the real PettingZoo envs.

No Ray: policies are plain objects with `action_probs(obs)`, so evaluation runs in
the driver, in `league evaluate`, and in tests alike. `Episode` is the game loop
(also behind `league play`): each seat is a "chooser", observation -> action.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.opponents import Policy, choose_action
from envs.registry import game_layout, get_game
from league.core.ids import side_of
from league.core.match import outcomes_from_ranks, team_ranks
from league.core.outcomes import SeatRecord

Chooser = Callable[[Mapping[str, np.ndarray]], int]
"""One seat's player: its observation dict -> the action it plays."""


@dataclass(frozen=True)
class Step:
    """One env step: what the seats that moved played, and the rewards it handed out."""

    actions: Mapping[str, int]
    rewards: Mapping[str, float]


class Episode:
    """One game in a fresh PettingZoo ``env``, every seat played by its chooser.

    The one game loop, for turn-based (AEC) and simultaneous (Parallel) games
    alike. Construction resets ``env`` with ``seed``; ``steps()`` then plays to
    the end, yielding after every env step so a caller can show the game as it
    goes. ``totals`` holds each seat's reward so far, also when a chooser ends
    the game early by raising (a human who quits). The caller closes ``env``.
    """

    def __init__(
        self, env: Any, choosers: Mapping[str, Chooser], seed: int, *, turn_based: bool
    ) -> None:
        self.env = env
        self.choosers = choosers
        self.turn_based = turn_based
        self.totals = {agent: 0.0 for agent in env.possible_agents}
        if turn_based:
            env.reset(seed=seed)
        else:
            self._obs, _ = env.reset(seed=seed)

    def steps(self) -> Iterator[Step]:
        return self._turn_based_steps() if self.turn_based else self._simultaneous_steps()

    def play(self) -> dict[str, float]:
        """Play to the end; each seat's total reward."""
        for _ in self.steps():
            pass
        return self.totals

    def _turn_based_steps(self) -> Iterator[Step]:
        env = self.env
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, _ = env.last()
            self.totals[agent] += float(reward)
            if terminated or truncated:
                env.step(None)
                continue
            action = self.choosers[agent](obs)
            env.step(action)
            yield Step({agent: action}, {a: float(r) for a, r in env.rewards.items()})

    def _simultaneous_steps(self) -> Iterator[Step]:
        env = self.env
        while env.agents:
            # Every seat decides from what it saw before this step: no peeking.
            actions = {a: self.choosers[a](self._obs[a]) for a in env.agents}
            self._obs, rewards, _, _, _ = env.step(actions)
            for agent, reward in rewards.items():
                self.totals[agent] += float(reward)
            yield Step(actions, {a: float(r) for a, r in rewards.items()})


def policy_chooser(
    policy: Policy,
    rng: np.random.Generator | None = None,
    greedy: bool = False,
    *,
    legal_only: bool = False,
) -> Chooser:
    """A seat that plays ``policy``: its argmax, or a sample drawn with ``rng``.

    ``legal_only`` never picks what the observation's action mask forbids,
    even if the policy leaks probability there (it would forfeit the game).
    """

    def choose(obs: Mapping[str, np.ndarray]) -> int:
        mask = obs["action_mask"] if legal_only else None
        return choose_action(policy.action_probs(obs), rng, greedy, mask)

    return choose


def start_game(policies: Iterable[Policy], rng: np.random.Generator) -> None:
    """Tell each policy a game starts: a mixture draws the member that plays it."""
    for policy in {id(p): p for p in policies}.values():
        new_game = getattr(policy, "new_game", None)
        if new_game is not None:
            new_game(rng)


def play_game(
    game: str,
    seats: Mapping[str, Policy],
    rng: np.random.Generator,
    greedy: Mapping[str, bool],
) -> dict[str, float]:
    """Play one game; `seats` maps every agent id to its policy. Returns total rewards."""
    spec = get_game(game)
    env = spec.make()
    seed = int(rng.integers(2**31))
    start_game(seats.values(), rng)
    choosers = {a: policy_chooser(seats[a], rng, greedy[a]) for a in env.possible_agents}
    try:
        return Episode(env, choosers, seed, turn_based=spec.kind == "turn_based").play()
    finally:
        env.close()


def duplicate_returns(
    game: str, policy: Policy, opponent: Policy, deals: int, seed: int = 6
) -> list[float]:
    """Duplicate play, as in duplicate bridge: each deal (one game seed) is played
    once with `policy` in each seat and `opponent` in every other, so every seat's
    cards reach `policy` once and the cards' luck largely cancels within a deal.
    `policy`'s mean return over each deal's games, one per deal. Both sample."""
    seats = game_layout(game).seats
    per_deal = []
    for deal in range(deals):
        total = 0.0
        for seat in seats:
            players = {s: policy if s == seat else opponent for s in seats}
            rng = np.random.default_rng([seed, deal])  # the same cards in every rotation
            total += play_game(game, players, rng, dict.fromkeys(seats, False))[seat]
        per_deal.append(total / len(seats))
    return per_deal


def policy_side(policy: Any) -> str:
    """The side a snapshot (or mixture) plays: its player id's side; "" for a
    scripted player, which plays any seat."""
    meta = getattr(policy, "meta", None)
    return side_of(getattr(meta, "player", "")) if meta is not None else ""


def evaluate(
    game: str,
    policy: Policy,
    opponent: Policy,
    games_per_seat: int,
    *,
    greedy: bool = True,
    opponent_greedy: bool = False,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    teams: Mapping[str, Any] | None = None,
) -> list[SeatRecord]:
    """`policy` plays `games_per_seat` games in each team of its side (every seat of
    the team), `opponent` every other seat; one record per team (named by its seat
    when it has one), its outcome by the teams' ranks (league.core.match).
    `progress` hears about every tenth of the games."""
    rng = np.random.default_rng(seed)
    layout = game_layout(game, teams)
    side = policy_side(policy)
    team_of = {seat: layout.team_of(seat).name for seat in layout.seats}
    records = []
    for team in layout.teams_of_side(side):
        seats = {a: (policy if a in team.seats else opponent) for a in layout.seats}
        _check_opponent_sides(layout, seats, policy)
        greedy_by_seat = {a: (greedy if a in team.seats else opponent_greedy) for a in layout.seats}
        label = team.seats[0] if len(team.seats) == 1 else team.name
        counts: Counter[str] = Counter()
        total = 0.0
        for played in range(1, games_per_seat + 1):
            returns = play_game(game, seats, rng, greedy_by_seat)
            if progress is not None and played % max(games_per_seat // 10, 1) == 0:
                progress(f"  seat {label}: {played:,}/{games_per_seat:,} games")
            outcomes = outcomes_from_ranks(team_ranks(returns, team_of), team_of)
            counts[outcomes[team.seats[0]]] += 1
            total += sum(returns[s] for s in team.seats)
        records.append(
            SeatRecord(label, counts["win"], counts["draw"], counts["loss"], total_return=total)
        )
    return records


def _check_opponent_sides(layout: Any, seats: Mapping[str, Policy], policy: Policy) -> None:
    """A snapshot plays only seats of its own side (their spaces)."""
    if not layout.multi_side:
        return
    for seat, player in seats.items():
        side = policy_side(player)
        if getattr(player, "meta", None) is not None and side != layout.side_of(seat):
            who = "the policy" if player is policy else "the opponent"
            raise ValueError(
                f"{who} plays side {side!r}; seat {seat!r} is on side {layout.side_of(seat)!r} "
                "(give a scripted opponent such as random, or a snapshot of that side)"
            )
