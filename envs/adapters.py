"""PettingZoo games as RLlib MultiAgentEnvs with masked dict observations.

Every game reaches RLlib in one shape: each agent observes
`{"observation": Box, "action_mask": Box(0, 1, (n_actions,), int8)}` (envs.spaces).
Turn-based games go through RLlib's own `PettingZooEnv`, simultaneous-move games
through `ParallelPettingZooEnv`. `config["game"]` is a game id (envs.registry).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

from envs.openspiel import observation_for, play_chance
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


class OpenSpielGameEnv(MultiAgentEnv):
    """A turn-based OpenSpiel game on pyspiel states directly: `TurnBasedGameEnv`'s
    results for the same game, seed and moves (tests/test_envs.py plays both side by
    side), without the PettingZoo layer that computes every seat's tensor and mask
    after every move (shimmy's env). Only the seat to move is observed.

    Rewards follow PettingZoo's AEC rule that `TurnBasedGameEnv` reports: a seat's
    reward is what OpenSpiel paid it since it last moved, reported when it is next
    observed (to move, or at the end, when every seat is observed in seat order).
    Chance outcomes are drawn as `envs.openspiel.OpenSpielEnv` draws them, from
    gymnasium's generator seeded by `reset`.
    """

    def __init__(self, config: dict | None = None):
        super().__init__()
        config = config or {}
        add_import_roots(list(config.get("import_paths", [])))
        game = get_game(config.get("game", ""))
        if game.openspiel is None or game.kind != "turn_based":
            raise ValueError(f"game {game.name!r} is not a turn-based OpenSpiel game")
        self.game = game.name
        # The very env the PettingZoo path builds: its game object, seats and spaces.
        self.env = game.make()
        self._spiel = self.env.unwrapped._game
        self.possible_agents = list(self.env.possible_agents)
        self.agents = list(self.possible_agents)
        self._adapters = {agent: self.env.adapters[agent] for agent in self.possible_agents}
        self.observation_spaces = {a: self.env.observation_space(a) for a in self.agents}
        self.action_spaces = {a: self.env.action_space(a) for a in self.agents}
        self.observation_space = gym.spaces.Dict(self.observation_spaces)
        self.action_space = gym.spaces.Dict(self.action_spaces)
        self._num_actions = self._spiel.num_distinct_actions()
        self._max_decisions = self._spiel.max_game_length()
        self.random_opening_moves = int(config.get("random_opening_moves", 0))
        if self.random_opening_moves < 0:
            raise ValueError("random_opening_moves must be >= 0")
        self._opening_rng = np.random.default_rng(config.get("seed"))
        self._np_random: np.random.Generator | None = None
        self._state: Any = None
        self._pending = [0.0] * len(self.possible_agents)
        self._decisions = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._np_random, _ = seeding.np_random(seed)
        if seed is not None:
            self._opening_rng = np.random.default_rng(seed)
        moves = int(self._opening_rng.integers(self.random_opening_moves + 1))
        self._new_game()
        for _ in range(moves):
            legal = self._state.legal_actions()
            self._apply(int(self._opening_rng.choice(np.asarray(legal))))
            if self._state.is_terminal() or self._decisions > self._max_decisions:
                self._new_game()  # never start a finished game
                break
        seat = self._state.current_player()
        observation, _ = self._observe(seat)
        return {self.possible_agents[seat]: observation}, {}

    def step(self, action: dict[str, Any]):
        seat = self._state.current_player()
        self._apply(int(action[self.possible_agents[seat]]))
        truncated = self._decisions > self._max_decisions
        obs_d: dict[str, Any] = {}
        rew_d: dict[str, float] = {}
        terminated_d: dict[str, bool] = {}
        truncated_d: dict[str, bool] = {}
        info_d: dict[str, Any] = {}
        terminal = self._state.is_terminal()
        over = terminal or truncated
        # Mid-game the seat to move; at the end every seat, in seat order.
        seats = range(len(self.possible_agents)) if over else [self._state.current_player()]
        for index in seats:
            agent = self.possible_agents[index]
            obs_d[agent], info_d[agent] = self._observe(index, terminal)
            rew_d[agent] = self._pending[index]
            terminated_d[agent] = terminal
            truncated_d[agent] = truncated
        terminated_d["__all__"] = over and all(terminated_d.values())
        truncated_d["__all__"] = over and all(truncated_d.values())
        return obs_d, rew_d, terminated_d, truncated_d, info_d

    def _new_game(self) -> None:
        self._state = self._spiel.new_initial_state()
        self._pending = [0.0] * len(self.possible_agents)
        self._decisions = 0
        self._play_chance()

    def _apply(self, action: int) -> None:
        self._pending[self._state.current_player()] = 0.0  # AEC: cleared as the seat moves
        self._state.apply_action(action)
        self._decisions += 1
        self._play_chance()
        for index, reward in enumerate(self._state.rewards()):
            self._pending[index] += reward

    def _play_chance(self) -> None:
        play_chance(self._state, self._np_random)

    def _observe(self, seat: int, terminal: bool = False) -> tuple[Any, dict[str, Any]]:
        """The seat's masked observation and its info (the mask, as shimmy's); at the
        end, zeros and an empty mask (`envs.openspiel.InformationStateObservations`)."""
        adapter = self._adapters[self.possible_agents[seat]]
        mask = np.zeros(self._num_actions, np.int8)
        if terminal:
            tensor = np.zeros(adapter.raw_space.shape, np.float32)
        else:
            mask[self._state.legal_actions(seat)] = 1
            tensor = observation_for(self._spiel, self._state, seat)
        info = {"action_mask": mask}
        return adapter(tensor, info), info


class SimultaneousGameEnv(ParallelPettingZooEnv):
    """A simultaneous-move (Parallel API) game; `config["game"]` is its game id."""

    def __init__(self, config: dict | None = None):
        add_import_roots(list((config or {}).get("import_paths", [])))
        game = get_game((config or {}).get("game", ""))
        if game.kind != "simultaneous":
            raise ValueError(f"game {game.name!r} is {game.kind}, not simultaneous")
        super().__init__(game.make())
        self.game = game.name


def rllib_env_class(game_name: str) -> type[MultiAgentEnv]:
    """The MultiAgentEnv class to give RLlib (with `env_config={"game": name}`):
    OpenSpiel games on pyspiel directly, other turn-based games through RLlib's
    PettingZoo wrapper, simultaneous-move games through its Parallel one."""
    game = get_game(game_name)
    if game.kind != "turn_based":
        return SimultaneousGameEnv
    return OpenSpielGameEnv if game.openspiel is not None else TurnBasedGameEnv


def make_rllib_env(game_name: str) -> MultiAgentEnv:
    """A ready MultiAgentEnv for one game (tests, evaluation, space lookups)."""
    return rllib_env_class(game_name)({"game": game_name})
