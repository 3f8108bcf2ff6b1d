"""Approximate exploitability: train a fresh best response against a frozen player.

For games too big to solve, OpenSpiel's maintainers recommend measuring how well
a newly trained agent exploits a fixed policy. `probe` does that with the league's
own machinery: the target is loaded on the env runners as a frozen module
(`main_0@0`, inference-only, never trained), a fresh `main_0` with the same
network learns against it by PPO for the given minutes, and the best response is
then evaluated against the target (greedy, in every seat, the target sampling as
it plays when deployed). A win rate near the game's value means the target is
hard to exploit; near 1, that a short search already beats it. A scripted target
(a game's reference opponent, `ref=search`, or a user's bot) is probed the same
way against the game's default network.

Seats, teams and sides: the best response plays one team (every seat of it) and
the target every other team, so in a free-for-all it meets copies of the target
in every other seat and in a team game it partners no one but itself. In a game
of two sides (predators and prey) the best response is a player of the other side
than the target's: it learns to exploit the target from across the table.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envs.opponents import Policy, make_opponent
from envs.registry import split_game_id
from league.config import TrainConfig
from league.core.ids import MAIN, player_id, reference_id, side_of
from league.core.league import League
from league.core.matchmaking import MatchmakingPlan
from league.core.outcomes import SeatRecord, wilson_interval
from league.core.seats import SeatLayout
from league.snapshot import POLICY_PREFIX, SnapshotPolicy, load_policy
from league.tools.evaluation import evaluate
from league.training.algorithm import (
    build_ppo_config,
    frozen_module_spec,
    snapshot_module_spec,
)
from league.training.env_runner import LeagueEnvRunner, PlanMapping
from league.training.loop import player_policy, start_ray


@dataclass(frozen=True)
class ProbeResult:
    env_steps: int
    seats: list[SeatRecord]
    """The best response's results against the target, one record per seat."""
    teams: int = 2
    """Teams in a match: with more than two, an even share of wins is 1/teams."""

    @property
    def games(self) -> int:
        return sum(s.games for s in self.seats)

    @property
    def win_rate(self) -> float:
        return sum(s.wins for s in self.seats) / self.games

    def win_interval(self) -> tuple[float, float]:
        return wilson_interval(sum(s.wins for s in self.seats), self.games)

    @property
    def mean_score(self) -> float:
        """Mean of +1 win / 0 draw / -1 loss for the best response."""
        return sum(s.wins - s.losses for s in self.seats) / self.games

    def score_interval(self) -> tuple[float, float]:
        """95% normal interval of the mean score (scores are +1/0/-1 per game)."""
        n = self.games
        mean = self.mean_score
        second = sum(s.wins + s.losses for s in self.seats) / n
        half = 1.96 * max(second - mean * mean, 0.0) ** 0.5 / n**0.5
        return mean - half, mean + half

    def format(self) -> str:
        lo, hi = self.win_interval()
        slo, shi = self.score_interval()
        even = ""
        if self.teams > 2:  # a free-for-all: one team in `teams` comes first by chance
            total = sum(s.total_return for s in self.seats) / self.games
            even = f" (an even share with {self.teams} teams: {1 / self.teams:.3f})"
            even += f"; mean return {total:+.3f}"
        lines = [
            f"best response after {self.env_steps:,d} env steps, {self.games} games:",
            f"  win rate {self.win_rate:.3f} [{lo:.3f}, {hi:.3f}]{even}; "
            f"mean score {self.mean_score:+.3f} [{slo:+.3f}, {shi:+.3f}]",
        ]
        return "\n".join(lines + [f"  {s.format()}" for s in self.seats])


@dataclass(frozen=True)
class ReferenceTarget:
    """A scripted target: a game's reference opponent by name (`search` on
    connect_four) or a user's bot (package.module:callable). Probing one bounds what
    a league that imitates or plays it can learn from it."""

    name: str
    game: str


Target = str | os.PathLike[str] | SnapshotPolicy | ReferenceTarget
"""What `probe` exploits: a snapshot directory, a loaded snapshot or a scripted player."""


def probe_config(target: SnapshotPolicy | ReferenceTarget, seed: int) -> TrainConfig:
    """Training settings of the best response: the target's game and network (a
    scripted target's game's default network), a league of one trainable main with
    the target as its only frozen opponent."""
    network: dict[str, Any] = {}
    if isinstance(target, SnapshotPolicy):
        model = target.meta.model_config
        network = {
            "hidden_sizes": list(model["hidden_sizes"]),
            "activation": model["activation"],
            # A snapshot made before conv encoders is an MLP (rlmodules.networks).
            "encoder": model.get("encoder", "mlp"),
            **({"conv_filters": model["conv_filters"]} if "conv_filters" in model else {}),
        }
    env, env_kwargs = split_game_id(
        target.game if isinstance(target, ReferenceTarget) else target.meta.game
    )
    return TrainConfig.from_dict(
        {
            "env": env,
            "env_kwargs": env_kwargs,
            "mode": "league",
            **network,
            "seed": seed,
            "eval_interval": 0,
            "dashboard": False,
            "random_opening_moves": 0,
            "run_dir": os.path.join(tempfile.gettempdir(), "league-probe"),
            "league": {"num_main_exploiters": 0, "num_league_exploiters": 0, "active_set_size": 1},
        },
        source="probe",
    )


def describe(target: SnapshotPolicy | ReferenceTarget) -> str:
    """The target's name as the league names its members: main_0@3, ref=search."""
    if isinstance(target, ReferenceTarget):
        return reference_id(target.name)
    version = target.meta.version
    return target.meta.player + ("" if version is None else f"@{version}")


def load_target(target: Target) -> SnapshotPolicy | ReferenceTarget:
    """A snapshot loaded (checked) from its directory; a loaded or scripted target as is."""
    if isinstance(target, SnapshotPolicy | ReferenceTarget):
        return target
    return load_policy(target)


class ProbeError(ValueError):
    """A target `probe` cannot train a best response against in this game."""


def best_response_side(layout: SeatLayout, target_side: str) -> str:
    """The side the best response plays: the target's in a game of one side, the
    other one in a game of two sides."""
    if not layout.multi_side:
        return target_side
    others = [s for s in layout.sides if s != target_side]
    if len(others) != 1:
        raise ProbeError(
            f"probe takes a game of one or two sides; this one has {len(layout.sides)}"
        )
    if len(layout.teams_of_side(others[0])) > 1:
        raise ProbeError(
            f"probe: side {others[0]!r} has several teams; the target could not play "
            "the ones the best response leaves (give the game teams with one team a side)"
        )
    return others[0]


def probe_plan(layout: SeatLayout, learner: str, target_id: str) -> MatchmakingPlan:
    """The best response `learner` in one team, the target in every other team."""
    side_opponents: tuple = ()
    side_probs: tuple = ()
    if layout.multi_side:
        side_opponents = (tuple((target_id,) for _ in layout.sides),)
        side_probs = (tuple((1.0,) for _ in layout.sides),)
    return MatchmakingPlan(
        learners=(learner,),
        learner_probs=(1.0,),
        opponents=((target_id,),),
        opponent_probs=((1.0,),),
        active_set=(target_id,),
        layout=layout,
        side_opponents=side_opponents,
        side_opponent_probs=side_probs,
    )


PROGRESS_EVERY_S = 15.0
"""A progress line at most this often (an iteration takes about a second)."""


def probe(
    target: Target,
    *,
    minutes: float = 5.0,
    games: int = 500,
    seed: int = 0,
    log: Callable[[str], None] = print,
) -> ProbeResult:
    """Train a best response to `target` (a snapshot directory, a snapshot already
    loaded, or a scripted player) for `minutes`, then play it against the target for
    `games` games."""
    target = load_target(target)
    cfg = probe_config(target, seed)
    layout = cfg.layout
    opponent: Policy
    if isinstance(target, ReferenceTarget):
        if layout.multi_side:
            raise ProbeError("probe: a scripted target plays one side; this game has several")
        opponent = make_opponent(target.name, cfg.game_id)  # refuses an unknown name first
        target_id = reference_id(target.name)
        frozen = (frozen_module_spec(cfg, target_id), {})  # scripted: no weights
        target_side = ""
    else:
        opponent = target
        target_side = side_of(target.meta.player)
        target_id = League(cfg.league, layout).take_snapshot(
            player_id(MAIN, 0, target_side), iteration=0
        )
        weights = {POLICY_PREFIX + k: v.numpy() for k, v in target.net.state_dict().items()}
        frozen = (snapshot_module_spec(cfg, target_side), weights)
    learner = player_id(MAIN, 0, best_response_side(layout, target_side))
    start_ray(cfg, log)
    plan = probe_plan(layout, learner, target_id)
    algo = build_ppo_config(cfg, plan).build_algo()
    try:
        mapping = PlanMapping(plan, layout.seats)

        def install(runner: LeagueEnvRunner) -> list[str]:
            return runner.update_league(add={target_id: frozen}, remove=(), mapping=mapping)

        local = cfg.resources.num_env_runners == 0  # remote runners: the local one never samples
        algo.env_runner_group.foreach_env_runner(install, local_env_runner=local)
        deadline = time.monotonic() + 60 * minutes
        env_steps = 0
        log(f"probe: training a best response to {describe(target)} for {minutes:g} min")
        reported = time.monotonic()
        while time.monotonic() < deadline:
            result = algo.train()
            env_steps += int(result["env_runners"].get("num_env_steps_sampled", 0))
            algo.env_runner_group.foreach_env_runner(
                LeagueEnvRunner.drain_matches, local_env_runner=True
            )  # the records are not needed; keep the buffers small
            now = time.monotonic()
            if now - reported >= PROGRESS_EVERY_S or now >= deadline:
                left = max(0.0, deadline - now) / 60
                log(f"probe: {env_steps:,d} env steps, {left:.1f} min left")
                reported = now
        best_response, _ = player_policy(algo, cfg, learner)
    finally:
        algo.stop()
    seats = evaluate(cfg.game_id, best_response, opponent, games // 2, greedy=True, seed=seed + 1)
    return ProbeResult(env_steps, seats, teams=len(layout.teams))
