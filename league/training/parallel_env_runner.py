"""A batched league env runner for simultaneous-move (PettingZoo Parallel API) games.

RLlib's `MultiAgentEnvRunner` runs its connector pipelines and episode bookkeeping
per agent per env step; with many agents acting at once (battle: 12 per copy) that
is most of the sampling time. `BatchedSimultaneousEnvRunner` steps many game copies
and per step runs exactly one forward pass per module over every (copy, live seat)
that module plays, then steps each copy with its action dict. Seats that terminate
or are truncated mid-game stop acting (PettingZoo's Parallel API drops them from
the next step's dicts) and keep their own flags in the finished episode, as in
RLlib's runner; a game ends when no seat is left. The game loop, the episodes
(built once per game through RLlib's public constructor), match records, metrics,
and how the batched runners differ from RLlib's are shared with the turn-based
runner in `league.training.batched_base`; tested against RLlib's runner in
tests/test_parallel_env_runner.py.
"""

from __future__ import annotations

from typing import Any

from league.training.batched_base import BatchedGamesRunner


class BatchedSimultaneousEnvRunner(BatchedGamesRunner):
    """Steps `num_envs_per_env_runner` copies of a simultaneous-move game (RLlib's
    `ParallelPettingZooEnv`, envs.adapters.SimultaneousGameEnv) with one batched
    forward pass per module per step over every live seat of every copy."""

    def _first_acting(self, observations: dict[str, Any]) -> list[str]:
        return list(observations)

    def _next_acting(
        self,
        observations: dict[str, Any],
        terminateds: dict[str, bool],
        truncateds: dict[str, bool],
    ) -> list[str]:
        return [
            seat for seat in observations if not (terminateds.get(seat) or truncateds.get(seat))
        ]
