"""PettingZoo-level wrappers that give every game the league's observation shape.

Both apply `envs.spaces.ObservationAdapter` per seat, reading the action mask from
the observation, from the seat's info, or (neither) allowing every action.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo.utils.env import AECEnv, ParallelEnv
from pettingzoo.utils.wrappers import (
    AssertOutOfBoundsWrapper,
    BaseParallelWrapper,
    BaseWrapper,
    OrderEnforcingWrapper,
    TerminateIllegalWrapper,
)

from envs.spaces import MASK_KEY, ObservationAdapter, seat_adapters

# PettingZoo's classic games come wrapped in these; each only checks a move (order,
# range, legality) and passes a legal one on unchanged.
_MOVE_CHECKS = (OrderEnforcingWrapper, AssertOutOfBoundsWrapper, TerminateIllegalWrapper)


def game_below_move_checks(env: AECEnv) -> AECEnv | None:
    """The unwrapped game if every wrapper around it only checks moves, else None."""
    while isinstance(env, BaseWrapper):
        if not isinstance(env, _MOVE_CHECKS):
            return None
        env = env.env
    return env


class LeagueObservations(BaseWrapper):
    """AEC (turn-based) wrapper: `observe(agent)` gives the league's masked dict.

    `step_checked(action)` is `step` for the hot path: a move the acting seat's
    freshly observed mask allows goes straight into the game when the wrappers below
    only check moves (a legal move passes them unchanged; each level costs a Python
    call per step and per attribute read), anything else through them.
    """

    def __init__(self, env: AECEnv, game: str):
        super().__init__(env)
        self.adapters: dict[str, ObservationAdapter] = seat_adapters(env, game)
        self._game = game_below_move_checks(env)
        self._legal: tuple[str, np.ndarray] | None = None  # acting seat's last mask

    def observation_space(self, agent: str) -> gym.spaces.Dict:
        return self.adapters[agent].space

    def observe(self, agent: str) -> Any:
        source = self._game if self._game is not None else self.env
        obs = self.adapters[agent](source.observe(agent), source.infos.get(agent))
        if agent == source.agent_selection:
            self._legal = (agent, obs[MASK_KEY])
        return obs

    def step_checked(self, action: Any) -> None:
        legal, self._legal = self._legal, None  # a mask holds for one move only
        game = self._game
        if (
            game is not None
            and action is not None
            and legal is not None
            and legal[0] == game.agent_selection
            and 0 <= action < len(legal[1])
            and legal[1][action]
        ):
            game.step(action)
        else:
            self.env.step(action)

    def step(self, action: Any) -> None:
        self._legal = None
        self.env.step(action)


class ParallelLeagueObservations(BaseParallelWrapper):
    """Parallel-API (simultaneous-move) wrapper with the same observations."""

    def __init__(self, env: ParallelEnv, game: str):
        super().__init__(env)
        self.adapters: dict[str, ObservationAdapter] = seat_adapters(env, game)

    def observation_space(self, agent: str) -> gym.spaces.Dict:
        return self.adapters[agent].space

    def _convert(self, obs: dict[str, Any], infos: dict[str, Any]) -> dict[str, Any]:
        return {a: self.adapters[a](o, infos.get(a)) for a, o in obs.items()}

    def reset(self, seed: int | None = None, options: dict | None = None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._convert(obs, infos), infos

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        return self._convert(obs, infos), rewards, terminations, truncations, infos
