"""Games that exist only here, reached by import path (`tests.toy_games:nim`).

`nim` is a real two-player AEC game in the shape the registry's games are not: a
`Dict` observation without an action mask (flattened by the league) and the mask
in `info`, as OpenSpiel's games through shimmy give it. `leave_early` is a
simultaneous-move (Parallel API) game whose seats leave at different steps, some
terminated, some truncated. The other callables are broken on purpose, one problem
each, for the one-line errors.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import AgentSelector

MAX_TAKE = 3


class Nim(AECEnv):
    """Take 1..3 stones in turn; whoever takes the last stone wins (+1, -1)."""

    metadata = {"name": "nim_v0", "is_parallelizable": False, "render_modes": []}

    def __init__(self, stones: int = 7, seats: int = 2, continuous: bool = False):
        super().__init__()
        if stones < 1:
            raise ValueError(f"stones must be >= 1, got {stones}")
        self.stones = stones
        self.possible_agents = [f"player_{i}" for i in range(seats)]
        self._obs_space = gym.spaces.Dict(
            {"stones": gym.spaces.Discrete(stones + 1), "mover": gym.spaces.Discrete(seats)}
        )
        self._act_space: gym.Space = (
            gym.spaces.Box(0.0, 1.0, (1,), np.float32)
            if continuous
            else gym.spaces.Discrete(MAX_TAKE)
        )

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def _mask(self) -> np.ndarray:
        return (np.arange(1, MAX_TAKE + 1) <= self.left).astype(np.int8)

    def observe(self, agent):
        return {"stones": self.left, "mover": self.possible_agents.index(agent)}

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.left = self.stones
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self._selector = AgentSelector(self.agents)
        self.agent_selection = self._selector.reset()
        self.infos = {a: {"action_mask": self._mask()} for a in self.agents}

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        take = int(action) + 1
        if take > self.left:
            raise ValueError(f"illegal move: take {take} of {self.left}")
        self.left -= take
        self.rewards = {a: 0.0 for a in self.agents}
        if self.left == 0:
            self.rewards = {a: (1.0 if a == agent else -1.0) for a in self.agents}
            self.terminations = {a: True for a in self.agents}
        self.agent_selection = self._selector.next()
        self.infos = {a: {"action_mask": self._mask()} for a in self.agents}
        self._accumulate_rewards()


def nim(stones: int = 7) -> Nim:
    return Nim(stones)


def continuous_nim() -> Nim:
    return Nim(continuous=True)


def three_seat_nim() -> Nim:
    return Nim(seats=3)


def one_seat_nim() -> Nim:
    return Nim(seats=1)


class _Lopsided(Nim):
    def observation_space(self, agent):
        if agent == "player_1":
            return gym.spaces.Box(0, 1, (5,), np.float32)
        return super().observation_space(agent)


def asymmetric_nim() -> Nim:
    return _Lopsided()


class _Crashing(Nim):
    """Nim whose rules break after some moves: a bug in a user's game, found mid-run.

    The moves are counted over every copy in the process, not per copy: a runner plays
    64 copies, so a per-copy count would need dozens of iterations, which a short
    timed run under load may not reach (the crash then never comes).
    """

    moves_in_process = 0

    def __init__(self, crash_after: int) -> None:
        super().__init__()
        self.crash_after = crash_after

    def step(self, action):
        _Crashing.moves_in_process += 1
        if _Crashing.moves_in_process > self.crash_after:
            raise RuntimeError("the rules of this game broke: no stones pile 4\nmore detail")
        super().step(action)


def crashing_nim(crash_after: int = 60) -> Nim:
    return _Crashing(crash_after)


def not_an_env() -> dict:
    return {"stones": 7}


NOT_CALLABLE = 3


class LeaveEarly(ParallelEnv):
    """Three seats move at once for `rounds` rounds; `player_2` is out (terminated)
    after round `leave_at`, `player_1` is cut off (truncated) after round `cut_at`,
    `player_0` plays to the end (terminated). Each round a seat earns its move minus
    the mean of the other live seats' moves; move `round % 3` is illegal.

    With `cut_at == rounds` the last two seats end differently in the same round (one
    terminated, one truncated), so RLlib's wrapper sets neither `__all__`.
    """

    metadata = {"name": "leave_early_v0", "render_modes": []}

    def __init__(self, rounds: int = 6, leave_at: int = 2, cut_at: int = 4):
        self.rounds, self.leave_at, self.cut_at = rounds, leave_at, cut_at
        self.possible_agents = ["player_0", "player_1", "player_2"]
        self._obs_space = gym.spaces.Dict(
            {
                "observation": gym.spaces.Box(-10.0, 10.0, (4,), np.float32),
                "action_mask": gym.spaces.Box(0, 1, (MAX_TAKE,), np.int8),
            }
        )
        self._act_space = gym.spaces.Discrete(MAX_TAKE)

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def _observe(self, agent: str, last: dict[str, int]) -> dict[str, np.ndarray]:
        others = [move for seat, move in last.items() if seat != agent]
        mask = np.ones(MAX_TAKE, np.int8)
        mask[self.round % MAX_TAKE] = 0
        features = [self.round, last.get(agent, -1), sum(others), len(self.agents)]
        return {"observation": np.asarray(features, np.float32), "action_mask": mask}

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.round = 0
        return {a: self._observe(a, {}) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        moves = {a: int(actions[a]) for a in self.agents if a in actions}
        self.round += 1
        rewards = {}
        for agent, move in moves.items():
            others = [m for a, m in moves.items() if a != agent]
            rewards[agent] = float(move - (np.mean(others) if others else 0.0))
        terminations = {a: False for a in self.agents}
        truncations = {a: False for a in self.agents}
        if "player_2" in terminations and self.round >= self.leave_at:
            terminations["player_2"] = True
        if "player_1" in truncations and self.round >= self.cut_at:
            truncations["player_1"] = True
        if self.round >= self.rounds:
            terminations["player_0"] = True
        observations = {a: self._observe(a, moves) for a in self.agents}
        infos = {a: {"round": self.round} for a in self.agents}
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos


def leave_early(rounds: int = 6, leave_at: int = 2, cut_at: int = 4) -> LeaveEarly:
    return LeaveEarly(rounds, leave_at, cut_at)
