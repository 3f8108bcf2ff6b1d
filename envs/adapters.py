"""PettingZoo games as RLlib MultiAgentEnvs with masked dict observations.

Every game reaches RLlib in one shape: each agent observes
`{"observation": Box, "action_mask": Box(0, 1, (n_actions,), int8)}`. Turn-based
games go through RLlib's own `PettingZooEnv`, simultaneous-move games through
`ParallelPettingZooEnv` (after `envs.wrappers.MaskedObservations`).
"""

from __future__ import annotations

from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

from envs.registry import get_game


class TurnBasedGameEnv(PettingZooEnv):
    """A turn-based (AEC) game from the registry; `config["game"]` names it."""

    def __init__(self, config: dict | None = None):
        game = get_game((config or {}).get("game", ""))
        if game.kind != "turn_based":
            raise ValueError(f"game {game.name!r} is {game.kind}, not turn_based")
        super().__init__(game.make())
        self.game = game.name


class SimultaneousGameEnv(ParallelPettingZooEnv):
    """A simultaneous-move (Parallel API) game from the registry."""

    def __init__(self, config: dict | None = None):
        game = get_game((config or {}).get("game", ""))
        if game.kind != "simultaneous":
            raise ValueError(f"game {game.name!r} is {game.kind}, not simultaneous")
        super().__init__(game.make())
        self.game = game.name


def rllib_env_class(game_name: str) -> type[PettingZooEnv | ParallelPettingZooEnv]:
    """The MultiAgentEnv class to give RLlib (with `env_config={"game": name}`)."""
    game = get_game(game_name)
    return TurnBasedGameEnv if game.kind == "turn_based" else SimultaneousGameEnv


def make_rllib_env(game_name: str) -> PettingZooEnv | ParallelPettingZooEnv:
    """A ready MultiAgentEnv for one game (tests, evaluation, space lookups)."""
    return rllib_env_class(game_name)({"game": game_name})
