"""PettingZoo-level wrappers that give every game the league's observation shape.

Both apply `envs.spaces.ObservationAdapter` per seat, reading the action mask from
the observation, from the seat's info, or (neither) allowing every action.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from pettingzoo.utils.env import AECEnv, ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper, BaseWrapper

from envs.spaces import ObservationAdapter, seat_adapters


class LeagueObservations(BaseWrapper):
    """AEC (turn-based) wrapper: `observe(agent)` gives the league's masked dict."""

    def __init__(self, env: AECEnv, game: str):
        super().__init__(env)
        self.adapters: dict[str, ObservationAdapter] = seat_adapters(env, game)

    def observation_space(self, agent: str) -> gym.spaces.Dict:
        return self.adapters[agent].space

    def observe(self, agent: str) -> Any:
        raw = self.env.observe(agent)
        return self.adapters[agent](raw, self.env.infos.get(agent))


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
