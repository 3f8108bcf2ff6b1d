"""PettingZoo-level wrappers that give every game the same observation shape."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo.utils.env import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper


def _masked_space(obs_space: gym.Space, n_actions: int) -> gym.spaces.Dict:
    if isinstance(obs_space, gym.spaces.Discrete):
        observation = gym.spaces.Box(0, 1, (int(obs_space.n),), np.int8)
    elif isinstance(obs_space, gym.spaces.Box):
        observation = obs_space
    else:
        raise TypeError(f"cannot give an action mask to observation space {obs_space}")
    mask = gym.spaces.Box(0, 1, (n_actions,), np.int8)
    return gym.spaces.Dict({"observation": observation, "action_mask": mask})


class MaskedObservations(BaseParallelWrapper):
    """Parallel-API wrapper: observations become `{"observation", "action_mask"}`.

    Discrete observations are one-hot encoded; every action is legal.
    """

    def __init__(self, env: ParallelEnv):
        super().__init__(env)
        self._spaces = {
            agent: _masked_space(env.observation_space(agent), int(env.action_space(agent).n))
            for agent in env.possible_agents
        }

    def observation_space(self, agent: str) -> gym.spaces.Dict:
        return self._spaces[agent]

    def _mask(self, agent: str, obs: Any) -> dict[str, np.ndarray]:
        space = self._spaces[agent]
        if isinstance(self.env.observation_space(agent), gym.spaces.Discrete):
            observation = np.zeros(space["observation"].shape, np.int8)
            observation[int(obs)] = 1
        else:
            observation = np.asarray(obs, dtype=space["observation"].dtype)
        mask = np.ones(space["action_mask"].shape, np.int8)
        return {"observation": observation, "action_mask": mask}

    def reset(self, seed: int | None = None, options: dict | None = None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return {a: self._mask(a, o) for a, o in obs.items()}, infos

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        masked = {a: self._mask(a, o) for a, o in obs.items()}
        return masked, rewards, terminations, truncations, infos
