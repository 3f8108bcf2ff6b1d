"""Games by name. `get_game` is the one place an unknown name is refused.

`Game.make()` returns the PettingZoo env with the league's observation shape
(`{"observation", "action_mask"}` for every agent): AEC for turn-based games,
Parallel for simultaneous-move games.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
from pettingzoo.classic import connect_four_v3, rps_v2, tictactoe_v3

from envs.wrappers import MaskedObservations


class UnknownGameError(ValueError):
    """A game name that is not in the registry."""


@dataclass(frozen=True)
class Game:
    name: str
    kind: Literal["turn_based", "simultaneous"]
    make: Callable[[], Any]
    description: str


def _rps() -> MaskedObservations:
    return MaskedObservations(rps_v2.parallel_env())


GAMES: dict[str, Game] = {
    game.name: game
    for game in (
        Game("tictactoe", "turn_based", tictactoe_v3.env, "tictactoe_v3: 3x3, two players"),
        Game("connect_four", "turn_based", connect_four_v3.env, "connect_four_v3: 6x7"),
        Game("rps", "simultaneous", _rps, "rps_v2: 15 simultaneous rounds"),
    )
}


def get_game(name: str) -> Game:
    try:
        return GAMES[name]
    except KeyError:
        known = ", ".join(sorted(GAMES))
        raise UnknownGameError(f"unknown game {name!r}; known games: {known}") from None


def game_spaces(name: str) -> tuple[gym.Space, gym.Space]:
    """(observation space, action space) of one seat; all seats share them here."""
    env = get_game(name).make()
    agent = env.possible_agents[0]
    return env.observation_space(agent), env.action_space(agent)
