"""What runs inside env-runner actors: seat assignment, match recording, module swaps.

Kept small and free of league logic: the plan (a `MatchmakingPlan`) arrives from
the coordinator, episodes are mapped by it, and finished episodes are buffered as
plain dicts until the coordinator drains them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from league.core.matchmaking import MatchmakingPlan

_BUFFER_ATTR = "_league_match_buffer"


class PlanMapping:
    """`policy_mapping_fn` that seats modules by a matchmaking plan.

    The seat assignment is a pure function of the episode id, so every agent of an
    episode sees the same draw without any per-episode state on the runner.
    """

    def __init__(self, plan: MatchmakingPlan, seats: Sequence[str]):
        self.plan = plan
        self.seats = tuple(seats)

    def assignment(self, episode_id: str) -> dict[str, str]:
        rng = np.random.default_rng(
            int(episode_id, 16) if _is_hex(episode_id) else hash(episode_id)
        )
        return self.plan.assign_seats(self.seats, rng)

    def __call__(self, agent_id: str, episode: Any, **kwargs: Any) -> str:
        return self.assignment(episode.id_)[agent_id]


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


def outcomes_from_returns(returns: Mapping[str, float]) -> dict[str, str]:
    """Per seat: win if its return beats every other seat's, loss if below the best."""
    outcomes = {}
    for seat, value in returns.items():
        others = [v for s, v in returns.items() if s != seat]
        best_other = max(others)
        outcomes[seat] = "win" if value > best_other else "loss" if value < best_other else "draw"
    return outcomes


class MatchRecorder(RLlibCallback):
    """Buffers one match dict per finished episode on the env runner that played it."""

    def on_episode_end(
        self,
        *,
        episode: Any,
        prev_episode_chunks: list | None = None,
        env_runner: Any = None,
        **kwargs: Any,
    ) -> None:
        if env_runner is None:
            return
        chunks = [*(prev_episode_chunks or []), episode]
        returns: dict[str, float] = {}
        for chunk in chunks:
            for agent_id, sa_episode in chunk.agent_episodes.items():
                returns[agent_id] = returns.get(agent_id, 0.0) + float(sa_episode.get_return())
        if len(returns) < 2:
            return
        match = {
            "episode_id": episode.id_,
            "modules": {agent: episode.module_for(agent) for agent in returns},
            "outcomes": outcomes_from_returns(returns),
            "length": int(sum(len(chunk) for chunk in chunks)),
        }
        buffer = getattr(env_runner, _BUFFER_ATTR, None)
        if buffer is None:
            buffer = []
            setattr(env_runner, _BUFFER_ATTR, buffer)
        buffer.append(match)


def drain_matches(env_runner: Any) -> list[dict]:
    """Take (and clear) the runner's buffered matches: each leaves the runner once."""
    buffer = getattr(env_runner, _BUFFER_ATTR, None) or []
    setattr(env_runner, _BUFFER_ATTR, [])
    return buffer


def update_runner(
    env_runner: Any,
    *,
    add: Mapping[str, tuple[RLModuleSpec, Mapping[str, Any]]],
    remove: Sequence[str],
    mapping: PlanMapping,
) -> list[str]:
    """Swap frozen modules and install the new plan, in one actor call.

    Actor calls run one at a time, so no sample() sees new modules with an old plan
    or the reverse. Episodes in flight may still name a removed module; they are
    dropped by forcing a reset (unfinished episodes produce no match record).
    Returns the runner's module ids afterwards.
    """
    module = env_runner.module
    for module_id, (spec, weights) in add.items():
        if module_id not in module:
            module.add_module(module_id, spec.build())
        module[module_id].set_state(dict(weights))
    removed = [m for m in remove if m in module]
    for module_id in removed:
        module.remove_module(module_id)
    env_runner.config.multi_agent(policy_mapping_fn=mapping)
    if removed:
        env_runner._needs_initial_reset = True
    return sorted(module.keys())
