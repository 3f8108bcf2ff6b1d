"""PettingZoo games as RLlib MultiAgentEnvs with masked dict observations.

Every game reaches RLlib in one shape: each agent observes
`{"observation": Box, "action_mask": Box(0, 1, (n_actions,), int8)}` (envs.spaces).
Turn-based games go through RLlib's own `PettingZooEnv`, simultaneous-move games
through `ParallelPettingZooEnv`. `config["game"]` is a game id (envs.registry).
"""

from __future__ import annotations

import numpy as np
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

from envs.registry import add_import_roots, get_game


class TurnBasedGameEnv(PettingZooEnv):
    """A turn-based (AEC) game; `config["game"]` is its game id.

    `config["random_opening_moves"] = k` starts each episode after 0..k uniformly
    random legal moves (played by neither policy), so self-play also visits the
    positions a weak or unusual opponent creates instead of one deterministic line.
    """

    def __init__(self, config: dict | None = None):
        config = config or {}
        add_import_roots(list(config.get("import_paths", [])))
        game = get_game(config.get("game", ""))
        if game.kind != "turn_based":
            raise ValueError(f"game {game.name!r} is {game.kind}, not turn_based")
        super().__init__(game.make())
        self.game = game.name
        self.random_opening_moves = int(config.get("random_opening_moves", 0))
        if self.random_opening_moves < 0:
            raise ValueError("random_opening_moves must be >= 0")
        self._opening_rng = np.random.default_rng(config.get("seed"))

    def step(self, action):
        """`PettingZooEnv.step`, reading the game's state from the unwrapped env.

        Same results (tests/test_envs.py plays both side by side): PettingZoo's
        wrappers keep no state of their own and write to the unwrapped env, but each
        attribute read through them walks the whole wrapper chain (`__getattr__` per
        level), which was the largest cost of sampling a board game. For the same
        reason a legal move skips wrappers that only check moves (`step_checked`).
        """
        game = self.env.unwrapped
        self.env.step_checked(action[game.agent_selection])  # envs.wrappers.LeagueObservations
        obs_d, rew_d, terminated_d, truncated_d, info_d = {}, {}, {}, {}, {}
        while game.agents:
            agent_id = game.agent_selection
            terminated = game.terminations[agent_id]
            truncated = game.truncations[agent_id]
            obs_d[agent_id] = self.env.observe(agent_id)
            rew_d[agent_id] = game._cumulative_rewards[agent_id]
            terminated_d[agent_id] = terminated
            truncated_d[agent_id] = truncated
            info_d[agent_id] = game.infos[agent_id]
            if terminated or truncated:
                self.env.step(None)
            else:
                break
        all_gone = not game.agents
        terminated_d["__all__"] = all_gone and all(terminated_d.values())
        truncated_d["__all__"] = all_gone and all(truncated_d.values())
        return obs_d, rew_d, terminated_d, truncated_d, info_d

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = super().reset(seed=seed, options=options)
        if seed is not None:
            self._opening_rng = np.random.default_rng(seed)
        moves = int(self._opening_rng.integers(self.random_opening_moves + 1))
        for _ in range(moves):
            agent = self.env.agent_selection
            legal = np.flatnonzero(self.env.observe(agent)["action_mask"])
            self.env.step(int(self._opening_rng.choice(legal)))
            if any(self.env.terminations.values()) or any(self.env.truncations.values()):
                return super().reset(seed=None, options=options)  # never start a finished game
        agent = self.env.agent_selection
        return {agent: self.env.observe(agent)}, info


class SimultaneousGameEnv(ParallelPettingZooEnv):
    """A simultaneous-move (Parallel API) game; `config["game"]` is its game id."""

    def __init__(self, config: dict | None = None):
        add_import_roots(list((config or {}).get("import_paths", [])))
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
