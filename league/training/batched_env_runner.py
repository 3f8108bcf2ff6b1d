"""A batched league env runner for turn-based games.

In a turn-based game one seat acts at a time, so none of the generality of RLlib's
`MultiAgentEnvRunner` is needed on the hot path: `BatchedLeagueEnvRunner` steps
many game copies and per step runs exactly one forward pass per module over every
copy whose acting seat that module plays. The game loop, the episodes (built once
per game through RLlib's public constructor), match records, metrics, and how the
batched runners differ from RLlib's are shared with the runner for simultaneous-move
games in `league.training.batched_base`; tested against RLlib's runner in
tests/test_batched_env_runner.py.
"""

from __future__ import annotations

from typing import Any

from league.training.batched_base import BatchedGamesRunner


class BatchedLeagueEnvRunner(BatchedGamesRunner):
    """Steps `num_envs_per_env_runner` copies of a turn-based game (RLlib's
    `PettingZooEnv`, envs.adapters.TurnBasedGameEnv) with one batched forward pass
    per module per step."""

    def _first_acting(self, observations: dict[str, Any]) -> list[str]:
        return [next(iter(observations))]

    def _next_acting(
        self,
        observations: dict[str, Any],
        terminateds: dict[str, bool],
        truncateds: dict[str, bool],
    ) -> list[str]:
        # The env's step ends with the seat to move (after any seats it retired).
        for seat in reversed(observations):
            if not (terminateds[seat] or truncateds[seat]):
                return [seat]
        return []
