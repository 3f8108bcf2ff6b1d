"""Games by name. `get_game` is the one place an unknown name is refused.

`Game.make()` returns the PettingZoo env with the league's observation shape
(`{"observation", "action_mask"}` for every agent): AEC for turn-based games,
Parallel for simultaneous-move games.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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
    train_defaults: Mapping[str, Any] = field(default_factory=dict)
    """TrainConfig values that suit this game best (measured; see README's league
    benchmark). They replace the generic defaults, and config files and flags
    replace them; the nested `league` mapping merges key by key."""


def _rps() -> MaskedObservations:
    return MaskedObservations(rps_v2.parallel_env())


GAMES: dict[str, Game] = {
    game.name: game
    for game in (
        Game(
            "tictactoe",
            "turn_based",
            tictactoe_v3.env,
            "tictactoe_v3: 3x3, two players",
            # Random openings and a higher entropy bonus keep self-play off a single
            # deterministic line (plain self-play left the second seat exploitable).
            train_defaults={
                "hidden_sizes": [128, 128],
                "lr": 5e-4,
                "entropy_coeff": 0.03,
                "random_opening_moves": 3,
                "num_epochs": 8,
                "minibatch_size": 500,
                "eval_interval": 10,
                "eval_games": 200,
                # The league measured best at 15 minutes (README, league benchmark):
                # the main gets most games and mostly plays itself; exploiters still
                # learn from its games against them.
                "league": {
                    "main_learner_share": 0.9,
                    "main_self_play_prob": 0.6,
                    "main_pfsp_prob": 0.15,
                    "main_forgotten_prob": 0.05,
                    "main_exploiter_prob": 0.2,
                },
            },
        ),
        Game(
            "connect_four",
            "turn_based",
            connect_four_v3.env,
            "connect_four_v3: 6x7",
            train_defaults={"random_opening_moves": 2, "eval_interval": 10},
        ),
        Game(
            "rps",
            "simultaneous",
            _rps,
            "rps_v2: 15 simultaneous rounds",
            # Strategies cycle: a strong entropy bonus (a uniform magnet, as in magnetic
            # mirror descent) damps the cycle, and games against the live main
            # exploiter push the main down its exploitability (3-minute screening:
            # league 0.03-0.06 per round, self-play 0.12-0.21; see README).
            train_defaults={
                "entropy_coeff": 0.3,
                "league": {
                    "main_self_play_prob": 0.2,
                    "main_pfsp_prob": 0.35,
                    "main_forgotten_prob": 0.15,
                    "main_exploiter_prob": 0.3,
                },
            },
        ),
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
