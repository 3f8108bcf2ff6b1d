"""The league's env runner: inference-only modules, seat mapping, match recording,
runtime module swaps. Everything the league does inside an env-runner actor is a
method of `LeagueEnvRunner`, an RLlib `MultiAgentEnvRunner` subclass that RLlib
drives unchanged (`sample()`, state, metrics, fault tolerance).

Kept free of league logic: the plan (a `MatchmakingPlan`) arrives from the driver,
episodes are mapped by it, and finished episodes are buffered as plain dicts until
the driver drains them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.utils.annotations import override

from league.core.ids import MAIN, player_id
from league.core.match import outcomes_from_ranks, team_ranks
from league.core.matchmaking import MatchmakingPlan
from league.core.seats import SeatLayout


class PlanMapping:
    """`policy_mapping_fn` that seats modules by a matchmaking plan.

    The seat assignment is a pure function of the episode id, so every agent of an
    episode sees the same draw without any per-episode state on the runner.
    """

    def __init__(self, plan: MatchmakingPlan, seats: Sequence[str]):
        self.plan = plan
        self.seats = tuple(seats)
        layout = plan.layout
        self.teams: dict[str, str] = (
            {seat: layout.team_of(seat).name for seat in layout.seats}
            if layout is not None and layout.seats == self.seats
            else {seat: seat for seat in self.seats}
        )
        """Seat -> team, for match records."""

    def assignment(self, episode_id: str) -> dict[str, str]:
        rng = np.random.default_rng(
            int(episode_id, 16) if _is_hex(episode_id) else hash(episode_id)
        )
        return self.plan.assign_seats(self.seats, rng)

    def __call__(self, agent_id: str, episode: Any, **kwargs: Any) -> str:
        return self.assignment(episode.id_)[agent_id]


class SelfPlayMapping:
    """Plain self-play: every seat is played by its side's one main player
    (`main_0`, or `<side>.main_0` in a game with several sides)."""

    def __init__(self, layout: SeatLayout):
        self.main_of = {seat: player_id(MAIN, 0, layout.side_of(seat)) for seat in layout.seats}

    def assignment(self, episode_id: str) -> dict[str, str]:
        return dict(self.main_of)

    def __call__(self, agent_id: Any, episode: Any, **kwargs: Any) -> str:
        return self.main_of[agent_id]


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


class LeagueEnvRunner(MultiAgentEnvRunner):
    """A MultiAgentEnvRunner for league play.

    - Builds every module inference-only: with explicit per-module specs RLlib 2.60
      does not set the flag on them, so runners would otherwise build value nets.
    - Buffers one match record per finished episode (`record_match`, called by the
      `MatchRecorder` callback) until the driver takes them (`drain_matches`).
    - Swaps frozen modules and installs a new plan in one actor call
      (`update_league`), so no `sample()` sees new modules with an old plan.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._matches: list[dict[str, Any]] = []
        self._reset_before_sampling = False
        super().__init__(*args, **kwargs)

    @override(MultiAgentEnvRunner)
    def make_module(self) -> None:
        env = self.env.unwrapped if self.env is not None else None
        spec = self.config.get_multi_rl_module_spec(
            env=env, spaces=self.get_spaces(), inference_only=True
        )
        for module_spec in spec.rl_module_specs.values():
            module_spec.inference_only = True
        self.module = spec.build()
        self.module.foreach_module(lambda _mid, mod: mod.to(self._device))

    @override(MultiAgentEnvRunner)
    def sample(self, *, force_reset: bool = False, **kwargs: Any) -> Any:
        # Episodes in flight may name a module `update_league` removed: start over.
        force_reset = force_reset or self._reset_before_sampling
        self._reset_before_sampling = False
        return super().sample(force_reset=force_reset, **kwargs)

    def record_match(self, match: dict[str, Any]) -> None:
        self._matches.append(match)

    def drain_matches(self) -> list[dict[str, Any]]:
        """Take (and clear) the buffered matches: each leaves the runner once."""
        matches, self._matches = self._matches, []
        return matches

    def module_ids(self) -> tuple[int, list[str]]:
        return self.worker_index, sorted(self.module.keys())

    def update_league(
        self,
        *,
        add: Mapping[str, tuple[RLModuleSpec, Mapping[str, Any]]],
        remove: Sequence[str],
        mapping: PlanMapping,
    ) -> list[str]:
        """Add/remove frozen modules and install the new plan's mapping.

        Actor calls run one at a time, so this is atomic with respect to sampling.
        Unfinished episodes produce no match record, so the forced reset after a
        removal loses no record. Returns the runner's module ids afterwards.
        """
        for module_id, (spec, weights) in add.items():
            if module_id not in self.module:
                self.module.add_module(module_id, spec.build())
            self.module[module_id].set_state(dict(weights))
        removed = [m for m in remove if m in self.module]
        for module_id in removed:
            self.module.remove_module(module_id)
        self.config.multi_agent(policy_mapping_fn=mapping)
        self._reset_before_sampling = self._reset_before_sampling or bool(removed)
        return sorted(self.module.keys())


def match_record(
    chunks: Sequence[Any], teams: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The match dict of a finished episode given as its chunks (oldest first), or
    None when fewer than two teams played. ``teams`` maps seats to teams (default:
    every seat alone); teams are ranked by the sum of their seats' returns.

    RLlib's runner (``env_runner: rllib``) only: a seat first observed at the game's
    end (a poker blind everyone folded to) has no agent episode, so it is missing
    here; the batched runners, the default, sum every seat's rewards from the game
    itself (`game_returns`)."""
    returns: dict[str, float] = {}
    for chunk in chunks:
        for agent_id, sa_episode in chunk.agent_episodes.items():
            returns[agent_id] = returns.get(agent_id, 0.0) + float(sa_episode.get_return())
    episode = chunks[-1]
    modules = {agent: episode.module_for(agent) for agent in returns}
    length = int(sum(len(chunk) for chunk in chunks))
    return match_from_returns(episode.id_, returns, modules, length, teams)


def match_from_returns(
    episode_id: str,
    returns: Mapping[str, float],
    modules: Mapping[str, str],
    length: int,
    teams: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The match dict of a finished game from each seat's return and module, or None
    when fewer than two teams played (see `match_record`)."""
    seat_teams = {seat: (teams or {}).get(seat, seat) for seat in returns}
    if len(set(seat_teams.values())) < 2:
        return None
    ranks = team_ranks(returns, seat_teams)
    return {
        "episode_id": episode_id,
        "modules": {seat: modules[seat] for seat in returns},
        "outcomes": outcomes_from_ranks(ranks, seat_teams),
        "returns": dict(returns),
        "length": length,
        "teams": seat_teams,
        "ranks": ranks,
    }


class MatchRecorder(RLlibCallback):
    """Hands one match dict per finished episode to the league env runner."""

    def on_episode_end(
        self,
        *,
        episode: Any,
        prev_episode_chunks: list | None = None,
        env_runner: Any = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(env_runner, LeagueEnvRunner):
            return
        mapping = env_runner.config.policy_mapping_fn
        teams = mapping.teams if isinstance(mapping, PlanMapping) else None
        record = match_record([*(prev_episode_chunks or []), episode], teams)
        if record is not None:
            env_runner.record_match(record)
