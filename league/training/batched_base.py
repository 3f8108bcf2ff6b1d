"""What the two batched league env runners share.

RLlib's `MultiAgentEnvRunner` pays per env step, per agent, for generic machinery:
two connector pipelines, a `MultiAgentEpisode.add_env_step`, per-agent metric
calls. A batched runner steps many game copies and per step runs exactly one
forward pass per module over every (copy, seat) that module plays now (trainable
players and frozen snapshots alike); everything else is what the game itself needs
(its RLlib env's `step`) plus list appends. Two subclasses differ only in who acts:
`batched_env_runner.BatchedLeagueEnvRunner` (turn-based games: one seat per copy)
and `parallel_env_runner.BatchedSimultaneousEnvRunner` (simultaneous moves: every
live seat of every copy).

Each game's data is kept as RLlib's own per-env-step lists (the shape of the RLlib
env's `step` dicts) and becomes a `MultiAgentEpisode` through its public constructor
when the game ends, so learners, connectors and GAE see exactly the episodes RLlib's
runner would have produced from the same moves (tested in
tests/test_batched_env_runner.py and tests/test_parallel_env_runner.py).

Differences from RLlib's runner, on purpose:
- Only finished games are returned; games still running when `sample()` has its
  steps continue in the next call (RLlib cuts them into chunks instead). A game
  that spans a weight update keeps the action log-probs it was played with, which
  PPO's importance ratio expects. So `sample()` returns about, not exactly, the
  asked-for steps; metrics count the steps actually played in the call.
- Finished episodes are always numpy (`to_numpy()` once per game, whatever
  `episodes_to_numpy` says: that flag is for RLlib's runner, which converts
  after every step).
- Episodes carry the action log-probs and distribution inputs PPO reads, not
  RLlib's `weights_seq_no` column, which no learner reads, and no spaces.
- RLlib's per-episode callbacks (`on_episode_start/step/end`) are not called: the
  league's one use of them, the match record, is made here directly.
- Of the finished games, `get_metrics` logs only those whose values RLlib's
  windowed episode metrics still hold (`in_last_windows`): the reduced metrics are
  the same, without a logging call per game of a game that ends every few steps.
- Seeds: with a `seed`, the first game of copy i starts from RLlib's first reset
  seed for it (the runner's seed + i), so a seeded run's first games are the ones
  RLlib's runner would play; every later game from the runner's own generator.
"""

from __future__ import annotations

import math
import time
import uuid
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    SAMPLE_TIMER,
)

from envs.spaces import MASK_KEY, OBS_KEY
from league.training.env_runner import (
    LeagueEnvRunner,
    PlanMapping,
    SelfPlayMapping,
    match_from_returns,
)

Move = tuple[int, dict[str, Any]]
"""An action and the extra model outputs stored with it (logits, log-prob)."""
AGENT, MODULE = "agent", "module"
"""Kinds of per-episode metric keys (`in_last_windows`)."""


@dataclass
class GameInPlay:
    """One game copy's data so far, as RLlib's per-env-step lists."""

    env: Any  # the copy's RLlib MultiAgentEnv (envs.adapters)
    episode_id: str = ""
    modules: dict[str, str] = field(default_factory=dict)
    observations: list[dict[str, Any]] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, int]] = field(default_factory=list)
    rewards: list[dict[str, float]] = field(default_factory=list)
    extra_model_outputs: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    acting: list[str] = field(default_factory=list)
    """The seats that move next: one in a turn-based game, every live one otherwise."""
    terminateds: dict[str, bool] = field(default_factory=dict)
    truncateds: dict[str, bool] = field(default_factory=dict)
    """Each seat's last done flags so far (simultaneous-move games, where seats that
    left mid-game are missing from the last step's dicts)."""
    started: float = 0.0


class BatchedGamesRunner(LeagueEnvRunner):
    """Steps `num_envs_per_env_runner` game copies with one batched forward pass per
    module per step. RLlib drives it unchanged (`sample()`, `get_state/set_state`,
    `get_metrics`, fault tolerance); the league's additions (`update_league`,
    `drain_matches`) are inherited from `LeagueEnvRunner`. Subclasses say how a step
    of their kind of game is played (`_play`) and who acts first (`_first_acting`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._games: list[GameInPlay] = []
        self._finished_for_metrics: list[tuple[MultiAgentEpisode, float]] = []
        super().__init__(*args, **kwargs)
        if (self.worker_index or 0) > 0:
            # A remote runner owns one CPU: intra-op threads would only contend.
            torch.set_num_threads(1)
        self._rng = np.random.default_rng(
            None if self.config.seed is None else [self.config.seed, self.worker_index or 0]
        )

    # -- RLlib's EnvRunner API -------------------------------------------------

    @override(MultiAgentEnvRunner)
    def sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool | None = None,
        random_actions: bool = False,
        force_reset: bool = False,
        **kwargs: Any,
    ) -> list[MultiAgentEpisode]:
        if force_reset or self._reset_before_sampling or not self._games:
            self._start_all_games()
        self._reset_before_sampling = False
        if num_timesteps is None and num_episodes is None:
            num_timesteps = self.config.get_rollout_fragment_length(self.worker_index) * len(
                self._games
            )
        explore = self.config.explore if explore is None else explore
        with self.metrics.log_time(SAMPLE_TIMER):
            return self._play(num_timesteps, num_episodes, explore, random_actions)

    @override(MultiAgentEnvRunner)
    def get_metrics(self) -> dict:
        # Games are whole episodes here (never cut into chunks), so each one is
        # logged as RLlib's runner logs a finished episode, by its own logger; but
        # only those whose values RLlib's windows still hold (see `in_last_windows`).
        finished = self._finished_for_metrics
        keep = in_last_windows(
            [_episode_metric_keys(episode) for episode, _ in finished],
            _episode_metrics_window(self.config),
        )
        for episode, duration in (finished[index] for index in keep):
            module_returns: Counter[str] = Counter()
            for sa in episode.agent_episodes.values():
                module_returns[sa.module_id] += sa.get_return()
            self._log_episode_metrics(
                len(episode),
                episode.get_return(),
                duration,
                {str(a): sa.get_return() for a, sa in episode.agent_episodes.items()},
                dict(module_returns),
                {str(a): len(sa) for a, sa in episode.agent_episodes.items()},
            )
        self._finished_for_metrics.clear()
        return self.metrics.reduce()

    # -- what a subclass says --------------------------------------------------

    def _first_acting(self, observations: dict[str, Any]) -> list[str]:
        """The seats that move first, given the reset's observations."""
        raise NotImplementedError

    def _next_acting(
        self,
        observations: dict[str, Any],
        terminateds: dict[str, bool],
        truncateds: dict[str, bool],
    ) -> list[str]:
        """The seats that move next, given a step's results (none: the game is over)."""
        raise NotImplementedError

    # -- the game loop ---------------------------------------------------------

    def _play(
        self,
        num_timesteps: int | None,
        num_episodes: int | None,
        explore: bool,
        random_actions: bool,
    ) -> list[MultiAgentEpisode]:
        finished: list[MultiAgentEpisode] = []
        env_steps = 0
        agent_steps: Counter[str] = Counter()
        module_steps: Counter[str] = Counter()
        while (
            # At least one finished game per call: a learner update needs an episode.
            (env_steps < num_timesteps or not finished)
            if num_timesteps is not None
            else len(finished) < num_episodes
        ):
            moves = self._choose_moves(explore, random_actions)
            for game, move in zip(self._games, moves, strict=True):
                actions = {seat: action for seat, (action, _) in move.items()}
                observations, rewards, terminateds, truncateds, infos = game.env.step(actions)
                env_steps += 1
                agent_steps.update(observations.keys())
                module_steps.update(game.modules[seat] for seat in observations)
                game.observations.append(observations)
                game.infos.append(infos)
                game.actions.append(actions)
                game.rewards.append(rewards)
                game.extra_model_outputs.append({seat: extra for seat, (_, extra) in move.items()})
                game.terminateds.update(terminateds)
                game.truncateds.update(truncateds)
                game.acting = self._next_acting(observations, terminateds, truncateds)
                if terminateds["__all__"] or truncateds["__all__"] or not game.acting:
                    finished.append(self._finish_game(game))
                    self._start_game(game)
        self._log_sampled(env_steps, len(finished), agent_steps, module_steps)
        return finished

    # -- games -----------------------------------------------------------------

    def _start_all_games(self) -> None:
        """Drop games in flight (they produce no record) and start every copy afresh."""
        first_start = not self._games
        self._games = [GameInPlay(env=env.unwrapped) for env in self.env.envs]
        seed = self._seed  # RLlib's seed for this runner (None: unseeded)
        for index, game in enumerate(self._games):
            # RLlib's runner seeds its first reset of copy i with seed + i.
            self._start_game(game, seed + index if first_start and seed is not None else None)

    def _start_game(self, game: GameInPlay, seed: int | None = None) -> None:
        observations, infos = game.env.reset(
            seed=int(self._rng.integers(2**31)) if seed is None else seed
        )
        game.episode_id = uuid.uuid4().hex
        mapping = self.config.policy_mapping_fn
        if isinstance(mapping, PlanMapping | SelfPlayMapping):  # one call per game
            game.modules = mapping.assignment(game.episode_id)
        else:
            seat_finder = MultiAgentEpisode(id_=game.episode_id)  # the mapping's one input
            agents = game.env.possible_agents
            game.modules = {agent: mapping(agent, seat_finder) for agent in agents}
        game.observations = [observations]
        game.infos = [infos]
        game.actions, game.rewards, game.extra_model_outputs = [], [], []
        game.terminateds, game.truncateds = {}, {}
        game.acting = self._first_acting(observations)
        game.started = time.perf_counter()

    def _choose_moves(self, explore: bool, random_actions: bool) -> list[dict[str, Move]]:
        """Per game, a move for each acting seat: one forward pass per module over
        every (game, seat) it plays now."""
        moves: list[dict[str, Move]] = [{} for _ in self._games]
        by_module: dict[str, list[tuple[int, str]]] = {}
        for index, game in enumerate(self._games):
            for seat in game.acting:
                by_module.setdefault(game.modules[seat], []).append((index, seat))
        for module_id, seated in by_module.items():
            observations = [self._games[i].observations[-1][seat] for i, seat in seated]
            chosen = self._act(module_id, observations, explore, random_actions)
            for (i, seat), move in zip(seated, chosen, strict=True):
                moves[i][seat] = move
        return moves

    def _act(
        self,
        module_id: str,
        observations: list[dict[str, np.ndarray]],
        explore: bool,
        random_actions: bool,
    ) -> list[Move]:
        """One module's moves for a batch of masked observations, in one forward pass:
        sampled with their log-probs when exploring, greedy (log-prob 0) otherwise."""
        masks = np.stack([obs[MASK_KEY] for obs in observations])
        if random_actions:
            return [(int(self._rng.choice(np.flatnonzero(mask))), {}) for mask in masks]
        module = self.module[module_id]
        batch = {
            Columns.OBS: {
                OBS_KEY: torch.from_numpy(np.stack([obs[OBS_KEY] for obs in observations])),
                MASK_KEY: torch.from_numpy(masks),
            }
        }
        with torch.inference_mode():
            if explore:
                logits = module.forward_exploration(batch)[Columns.ACTION_DIST_INPUTS]
                dist = module.get_exploration_action_dist_cls().from_logits(logits)
                actions = dist.sample()
                logp = dist.logp(actions)
            else:
                logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
                actions = logits.argmax(dim=-1)
                logp = torch.zeros_like(actions, dtype=logits.dtype)
        actions_np = actions.cpu().numpy()
        logits_np = logits.cpu().numpy()
        logp_np = logp.cpu().numpy()
        return [
            (
                int(actions_np[row]),
                {Columns.ACTION_DIST_INPUTS: logits_np[row], Columns.ACTION_LOGP: logp_np[row]},
            )
            for row in range(len(observations))
        ]

    def _finish_game(self, game: GameInPlay) -> MultiAgentEpisode:
        """The finished game as a numpy episode; its match record in league mode."""
        episode = episode_of(game)
        self._finished_for_metrics.append((episode, time.perf_counter() - game.started))
        mapping = self.config.policy_mapping_fn
        if isinstance(mapping, PlanMapping):  # league mode
            record = match_from_returns(
                episode.id_, game_returns(game), game.modules, len(episode), mapping.teams
            )
            if record is not None:
                self.record_match(record)
        return episode

    def _log_sampled(
        self,
        env_steps: int,
        episodes: int,
        agent_steps: Counter[str],
        module_steps: Counter[str],
    ) -> None:
        """The counters RLlib's runner logs per step, logged once per `sample()`."""
        log = self.metrics.log_value
        log(NUM_ENV_STEPS_SAMPLED, env_steps, reduce="sum")
        log(NUM_ENV_STEPS_SAMPLED_LIFETIME, env_steps, reduce="lifetime_sum", with_throughput=True)
        log(NUM_EPISODES, episodes, reduce="sum")
        log(NUM_EPISODES_LIFETIME, episodes, reduce="lifetime_sum")
        for agent, steps in agent_steps.items():
            log((NUM_AGENT_STEPS_SAMPLED, str(agent)), steps, reduce="sum")
            log((NUM_AGENT_STEPS_SAMPLED_LIFETIME, str(agent)), steps, reduce="lifetime_sum")
        for module_id, steps in module_steps.items():
            log((NUM_MODULE_STEPS_SAMPLED, module_id), steps, reduce="sum")
            log((NUM_MODULE_STEPS_SAMPLED_LIFETIME, module_id), steps, reduce="lifetime_sum")


def in_last_windows(keys_per_item: Sequence[Iterable[Hashable]], window: int) -> list[int]:
    """Indices, in order, of the items whose values a window of the last `window`
    values per key still holds after all items are logged in order.

    RLlib logs every finished episode's metrics into windowed stats (a deque of the
    last `window` values per key: the episode return, each agent's and each module's
    return), so logging just these items leaves every window exactly as logging all
    of them would. Poker games end every few steps: logging each of the thousands of
    episodes of a `sample()` took a quarter of its time in a profile on leduc_poker.
    """
    seen: Counter[Hashable] = Counter()
    keep: list[int] = []
    for index in range(len(keys_per_item) - 1, -1, -1):
        keys = keys_per_item[index]
        if any(seen[key] < window for key in keys):
            keep.append(index)
        seen.update(keys)
    return keep[::-1]


def _episode_metric_keys(episode: MultiAgentEpisode) -> list[Hashable]:
    """The windowed keys RLlib's `_log_episode_metrics` writes for an episode: the
    episode's own (length, return, duration), each agent's and each module's."""
    return [
        None,
        *((AGENT, agent) for agent in episode.agent_episodes),
        *((MODULE, sa.module_id) for sa in episode.agent_episodes.values()),
    ]


def _episode_metrics_window(config: Any) -> int:
    """The window RLlib's `MultiAgentEnvRunner._log_episode_metrics` gives an episode's
    metrics: the smoothing window shared among the env runners."""
    return max(
        1, math.ceil(config.metrics_num_episodes_for_smoothing / (config.num_env_runners or 1))
    )


def game_returns(game: GameInPlay) -> dict[str, float]:
    """Each seat's return, summed from the game's own rewards: a seat first observed
    at the end (a poker blind everyone folded to) has no steps in the episode, which
    drops its reward, but it played the game and its return decides the ranks."""
    returns: dict[str, float] = {}
    for rewards in game.rewards:
        for seat, reward in rewards.items():
            returns[seat] = returns.get(seat, 0.0) + float(reward)
    return returns


def episode_of(game: GameInPlay) -> MultiAgentEpisode:
    """A finished game as the numpy `MultiAgentEpisode` RLlib's runner would make."""
    terminateds, truncateds = _end_of_game_flags(game)
    # No spaces on the episode (RLlib's runner sets them): nothing downstream reads
    # them, each game would carry pickled copies of them to the learner, and with
    # them every step PPO's learner connector adds to a numpy episode runs a
    # `space.contains` check.
    episode = MultiAgentEpisode(
        id_=game.episode_id,
        observations=game.observations,
        infos=game.infos,
        actions=game.actions,
        rewards=game.rewards,
        extra_model_outputs=game.extra_model_outputs,
        terminateds=terminateds,
        truncateds=truncateds,
        len_lookback_buffer=0,
        agent_module_ids=dict(game.modules),  # the episode drops seats with no steps
    )
    # Once per game (RLlib's runner converts after every step when asked): numpy
    # columns cross to the learner in a fraction of the time lists of arrays take.
    episode.to_numpy()
    return episode


def _end_of_game_flags(game: GameInPlay) -> tuple[dict[str, bool], dict[str, bool]]:
    """Each seat's done flags as RLlib's runner records them at the end of a game.

    `MultiAgentEpisode.add_env_step` declares an episode terminated once every agent
    is done, also when they were truncated (a time limit such as battle's
    `max_cycles`) or ended some one way, some the other, and marks every seat that
    observes that last step terminated with it (so GAE does not bootstrap there:
    the game is over). Seats that left earlier keep their own flags.
    """
    terminateds, truncateds = dict(game.terminateds), dict(game.truncateds)
    for seat in game.observations[-1]:
        terminateds[seat] = True
    terminateds["__all__"] = True
    truncateds.setdefault("__all__", False)
    return terminateds, truncateds
