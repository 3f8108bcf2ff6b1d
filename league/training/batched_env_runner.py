"""A batched league env runner for turn-based games.

RLlib's `MultiAgentEnvRunner` pays per env step, per agent, for generic machinery:
two connector pipelines, a `MultiAgentEpisode.add_env_step`, per-agent metric
calls. In a turn-based game one seat acts at a time, so none of that generality
is needed on the hot path. `BatchedLeagueEnvRunner` steps many game copies and per
step runs exactly one forward pass per module over every copy whose acting seat
that module plays (trainable players and frozen snapshots alike); everything else
is what the game itself needs (`PettingZooEnv.step`) plus list appends.

Each game's data is kept as RLlib's own per-env-step lists (the shape of
`PettingZooEnv.step`'s dicts) and becomes a `MultiAgentEpisode` through its public
constructor when the game ends, so learners, connectors and GAE see exactly the
episodes RLlib's runner would have produced from the same moves (tested in
tests/test_batched_env_runner.py).

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
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
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
from league.training.env_runner import LeagueEnvRunner, PlanMapping, match_record


@dataclass
class GameInPlay:
    """One game copy's data so far, as RLlib's per-env-step lists."""

    env: Any  # a PettingZooEnv (envs.adapters.TurnBasedGameEnv)
    episode_id: str = ""
    modules: dict[str, str] = field(default_factory=dict)
    observations: list[dict[str, Any]] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, int]] = field(default_factory=list)
    rewards: list[dict[str, float]] = field(default_factory=list)
    extra_model_outputs: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    acting: str = ""
    started: float = 0.0


class BatchedLeagueEnvRunner(LeagueEnvRunner):
    """Steps `num_envs_per_env_runner` copies of a turn-based game with one batched
    forward pass per module per step. RLlib drives it unchanged (`sample()`,
    `get_state/set_state`, `get_metrics`, fault tolerance); the league's additions
    (`update_league`, `drain_matches`) are inherited from `LeagueEnvRunner`."""

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
        # logged as RLlib's runner logs a finished episode, by its own logger.
        for episode, duration in self._finished_for_metrics:
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

    # -- the game loop ---------------------------------------------------------

    def _start_all_games(self) -> None:
        """Drop games in flight (they produce no record) and start every copy afresh."""
        self._games = [GameInPlay(env=env.unwrapped) for env in self.env.envs]
        for game in self._games:
            self._start_game(game)

    def _start_game(self, game: GameInPlay) -> None:
        observations, infos = game.env.reset(seed=int(self._rng.integers(2**31)))
        game.episode_id = uuid.uuid4().hex
        mapping = self.config.policy_mapping_fn
        if isinstance(mapping, PlanMapping):  # the league: one draw per game, no episode
            game.modules = mapping.assignment(game.episode_id)
        else:
            seat_finder = MultiAgentEpisode(id_=game.episode_id)  # the mapping's one input
            agents = game.env.possible_agents
            game.modules = {agent: mapping(agent, seat_finder) for agent in agents}
        game.observations = [observations]
        game.infos = [infos]
        game.actions, game.rewards, game.extra_model_outputs = [], [], []
        game.acting = next(iter(observations))
        game.started = time.perf_counter()

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
            for game, (action, extra) in zip(self._games, moves, strict=True):
                agent = game.acting
                observations, rewards, terminateds, truncateds, infos = game.env.step(
                    {agent: action}
                )
                env_steps += 1
                for observed in observations:
                    agent_steps[observed] += 1
                    module_steps[game.modules[observed]] += 1
                game.observations.append(observations)
                game.infos.append(infos)
                game.actions.append({agent: action})
                game.rewards.append(rewards)
                game.extra_model_outputs.append({agent: extra})
                if terminateds["__all__"] or truncateds["__all__"]:
                    finished.append(self._finish_game(game, terminateds, truncateds))
                    self._start_game(game)
                else:
                    game.acting = next(
                        a for a in reversed(observations) if not (terminateds[a] or truncateds[a])
                    )
        self._log_sampled(env_steps, len(finished), agent_steps, module_steps)
        return finished

    def _choose_moves(
        self, explore: bool, random_actions: bool
    ) -> list[tuple[int, dict[str, Any]]]:
        """One move per game: one forward pass per module over the games it plays now."""
        moves: list[tuple[int, dict[str, Any]]] = [(0, {})] * len(self._games)
        by_module: dict[str, list[int]] = {}
        for index, game in enumerate(self._games):
            by_module.setdefault(game.modules[game.acting], []).append(index)
        for module_id, indices in by_module.items():
            observations = [self._games[i].observations[-1][self._games[i].acting] for i in indices]
            masks = np.stack([obs[MASK_KEY] for obs in observations])
            if random_actions:
                for i, mask in zip(indices, masks, strict=True):
                    moves[i] = (int(self._rng.choice(np.flatnonzero(mask))), {})
                continue
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
            for row, i in enumerate(indices):
                moves[i] = (
                    int(actions_np[row]),
                    {
                        Columns.ACTION_DIST_INPUTS: logits_np[row],
                        Columns.ACTION_LOGP: logp_np[row],
                    },
                )
        return moves

    def _finish_game(
        self, game: GameInPlay, terminateds: dict[str, bool], truncateds: dict[str, bool]
    ) -> MultiAgentEpisode:
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
            agent_module_ids=game.modules,
        )
        # Once per game (RLlib's runner converts after every step when asked): numpy
        # columns cross to the learner in a fraction of the time lists of arrays take.
        episode.to_numpy()
        self._finished_for_metrics.append((episode, time.perf_counter() - game.started))
        mapping = self.config.policy_mapping_fn
        if isinstance(mapping, PlanMapping):  # league mode
            record = match_record([episode], mapping.teams)
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
