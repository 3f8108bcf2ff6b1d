"""PettingZoo games for the league: registry, RLlib adapters, reference opponents."""

from envs.registry import GAMES, Game, UnknownGameError, get_game

__all__ = ["GAMES", "Game", "UnknownGameError", "get_game"]
