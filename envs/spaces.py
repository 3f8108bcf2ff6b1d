"""One observation shape for every game, detected from the env's own spaces.

The league's modules, snapshots and reference opponents all read
`{"observation": Box, "action_mask": Box(0, 1, (n_actions,), int8)}`. An
`ObservationAdapter` turns whatever a PettingZoo env gives one seat into that:

- the action mask comes from `observation["action_mask"]`, else from
  `info["action_mask"]` (OpenSpiel through shimmy), else every action is legal;
- a `Box` keeps its shape (an H x W x C board goes to a convolutional encoder),
  bool and float64 values become int8 and float32;
- a `Discrete` observation is one-hot; a `Dict` (without the mask), `Tuple`,
  `MultiDiscrete` or `MultiBinary` one is flattened with gymnasium's `flatten`.

Seats may differ in their spaces: seats with equal spaces form a *side*
(`league.core.seats`), and each side gets its own players. Anything the league
cannot train on (non-Discrete actions, fewer than two seats, text observations) is
refused with a `GameSpaceError` naming the game, the seat and the space.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

OBS_KEY = "observation"
MASK_KEY = "action_mask"
_FLATTENABLE = (gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


class GameSpaceError(ValueError):
    """A game whose seats or spaces the league cannot train on."""


def _box_dtype(dtype: np.dtype) -> np.dtype:
    if dtype == np.bool_:
        return np.dtype(np.int8)
    if np.issubdtype(dtype, np.floating) and dtype != np.float32:
        return np.dtype(np.float32)
    return np.dtype(dtype)


class ObservationAdapter:
    """Raw observations of one seat -> the league's masked dict (see module doc)."""

    def __init__(self, raw_space: gym.Space, n_actions: int, where: str) -> None:
        self.raw_space = raw_space
        self.n_actions = n_actions
        inner = raw_space
        self.mask_in_observation = isinstance(raw_space, gym.spaces.Dict) and (
            MASK_KEY in raw_space.spaces
        )
        if self.mask_in_observation:
            mask_space = raw_space[MASK_KEY]
            if int(np.prod(mask_space.shape)) != n_actions:
                raise GameSpaceError(
                    f"{where}: action_mask {mask_space} does not cover the {n_actions} actions"
                )
            rest = {k: v for k, v in raw_space.spaces.items() if k != MASK_KEY}
            inner = rest[OBS_KEY] if set(rest) == {OBS_KEY} else gym.spaces.Dict(rest)
        self.inner_space = inner
        if isinstance(inner, gym.spaces.Box):
            dtype = _box_dtype(inner.dtype)
            self._convert = self._box
            observation = gym.spaces.Box(
                inner.low.astype(dtype), inner.high.astype(dtype), inner.shape, dtype
            )
            self._passthrough = dtype == inner.dtype
        elif isinstance(inner, gym.spaces.Discrete):
            self._convert = self._one_hot
            observation = gym.spaces.Box(0, 1, (int(inner.n),), np.int8)
            self._passthrough = False
        elif isinstance(inner, _FLATTENABLE):
            self._convert = self._flatten
            flat = gym.spaces.flatten_space(inner)
            observation = gym.spaces.Box(
                flat.low.astype(np.float32), flat.high.astype(np.float32), flat.shape, np.float32
            )
            self._passthrough = False
        else:
            raise GameSpaceError(f"{where}: cannot train on observation space {raw_space}")
        self.observation_space = observation
        self.space = gym.spaces.Dict(
            {OBS_KEY: observation, MASK_KEY: gym.spaces.Box(0, 1, (n_actions,), np.int8)}
        )

    def _box(self, value: Any) -> np.ndarray:
        if self._passthrough and isinstance(value, np.ndarray):
            return value
        return np.asarray(value, dtype=self.observation_space.dtype)

    def _one_hot(self, value: Any) -> np.ndarray:
        out = np.zeros(self.observation_space.shape, np.int8)
        out[int(value) - int(self.inner_space.start)] = 1
        return out

    def _flatten(self, value: Any) -> np.ndarray:
        return gym.spaces.flatten(self.inner_space, value).astype(np.float32)

    def __call__(self, raw: Any, info: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        if self.mask_in_observation:
            mask = np.asarray(raw[MASK_KEY], dtype=np.int8)
            rest = (
                raw[OBS_KEY]
                if OBS_KEY in raw and len(raw) == 2
                else {k: v for k, v in raw.items() if k != MASK_KEY}
            )
            return {OBS_KEY: self._convert(rest), MASK_KEY: mask}
        info_mask = info.get(MASK_KEY) if isinstance(info, Mapping) else None
        if info_mask is not None:
            mask = np.asarray(info_mask, dtype=np.int8).reshape(self.n_actions)
        else:
            mask = np.ones(self.n_actions, np.int8)
        return {OBS_KEY: self._convert(raw), MASK_KEY: mask}

    def to_league(self, observation: Any, action_mask: Any = None) -> dict[str, np.ndarray]:
        """An observation as the env gave it (a league dict passes through), with an
        optional explicit mask: what `load_policy(...).action_probs` accepts."""
        if (
            isinstance(observation, Mapping)
            and set(observation) == {OBS_KEY, MASK_KEY}
            and np.shape(observation[OBS_KEY]) == self.observation_space.shape
            and action_mask is None
        ):
            return {
                OBS_KEY: np.asarray(observation[OBS_KEY], self.observation_space.dtype),
                MASK_KEY: np.asarray(observation[MASK_KEY], np.int8),
            }
        info = {MASK_KEY: action_mask} if action_mask is not None else None
        converted = self(observation, info)
        if action_mask is not None:
            converted[MASK_KEY] = np.asarray(action_mask, np.int8).reshape(self.n_actions)
        return converted


def seat_adapters(env: Any, game: str) -> dict[str, ObservationAdapter]:
    """An adapter per seat of a PettingZoo env, after checking the league can train on it."""
    agents = list(env.possible_agents)
    if len(agents) < 2:
        raise GameSpaceError(
            f"game {game!r} has {len(agents)} seat(s) ({', '.join(map(str, agents))}); "
            f"a league needs at least two"
        )
    adapters: dict[str, ObservationAdapter] = {}
    for agent in agents:
        action_space = env.action_space(agent)
        if not isinstance(action_space, gym.spaces.Discrete):
            raise GameSpaceError(
                f"game {game!r}, seat {agent!r}: action space {action_space} is not Discrete"
            )
        if int(action_space.start) != 0:
            raise GameSpaceError(
                f"game {game!r}, seat {agent!r}: action space {action_space} does not start at 0"
            )
        adapters[agent] = ObservationAdapter(
            env.observation_space(agent), int(action_space.n), f"game {game!r}, seat {agent!r}"
        )
    return adapters


def space_key(adapter: ObservationAdapter) -> str:
    """Equal for seats whose league spaces are equal: the side a seat belongs to."""
    return repr(adapter.space)
