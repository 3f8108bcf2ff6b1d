"""PettingZoo games for the league: registry, RLlib adapters, reference opponents."""

from envs.registry import (
    REGISTRY_NAMES,
    Game,
    UnknownGameError,
    get_game,
    make_game_id,
    split_game_id,
)

__all__ = [
    "REGISTRY_NAMES",
    "Game",
    "UnknownGameError",
    "get_game",
    "make_game_id",
    "split_game_id",
]
