"""The batched league env runner against RLlib's own runner and the league's needs.

Both runners are built in-process from the same PPOConfig (as RLlib builds a
local env runner), share one set of weights, and play greedily from the empty
board, so the same moves must give the same episodes.
"""

from __future__ import annotations

import numpy as np
import pytest
from episode_data import agent_data
from ray.rllib.core.columns import Columns
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

from envs.adapters import make_rllib_env
from league.config import ConfigError, TrainConfig
from league.core.ids import snapshot_id
from league.core.matchmaking import MatchmakingPlan
from league.training.algorithm import (
    MAIN_PLAYER,
    build_ppo_config,
    env_runner_class,
    snapshot_module_spec,
)
from league.training.batched_base import in_last_windows
from league.training.batched_env_runner import BatchedLeagueEnvRunner
from league.training.env_runner import LeagueEnvRunner, PlanMapping
from league.training.parallel_env_runner import BatchedSimultaneousEnvRunner


def _config(game: str = "tictactoe", **overrides):
    cfg = TrainConfig.from_dict(
        {
            "env": game,
            "mode": "selfplay",
            "num_env_runners": 0,
            "num_envs_per_env_runner": 4,
            "random_opening_moves": 0,
            "hidden_sizes": [16],
            **overrides,
        }
    )
    return cfg, build_ppo_config(cfg)


@pytest.mark.parametrize("game", ["tictactoe", "connect_four"])
def test_same_moves_give_the_same_episodes_as_rllibs_runner(ray_session, game):
    _, config = _config(game)
    ours = BatchedLeagueEnvRunner(config=config, worker_index=0)
    theirs = LeagueEnvRunner(config=config)
    theirs.module.set_state(ours.module.get_state())
    mine = ours.sample(num_episodes=3, explore=False)
    reference = theirs.sample(num_episodes=1, explore=False)[0].to_numpy()
    assert len(mine) >= 3
    # Greedy play from the empty board is deterministic: every game is the same one.
    for episode in mine:
        assert isinstance(episode, MultiAgentEpisode)
        assert episode.is_done and episode.is_terminated
        assert len(episode) == len(reference)
        assert episode.env_t_started == 0
        assert agent_data(episode) == agent_data(reference)
        assert episode.get_return() == reference.get_return()


def test_exploring_episodes_carry_what_ppo_needs(ray_session):
    _, config = _config("connect_four")
    runner = BatchedLeagueEnvRunner(config=config, worker_index=0)
    episodes = runner.sample(num_timesteps=300)
    metrics = runner.get_metrics()
    played = metrics["num_env_steps_sampled"]
    played = played.peek() if hasattr(played, "peek") else played
    assert played >= 300
    assert episodes and all(e.is_done for e in episodes)

    # Finished games reach RLlib's episode metrics, as from RLlib's own runner.
    def peek(key):
        value = metrics[key]
        return value.peek() if hasattr(value, "peek") else value

    lengths = [len(e) for e in episodes]
    assert min(lengths) <= peek("episode_len_mean") <= max(lengths)
    assert peek("episode_len_min") == min(lengths) and peek("episode_len_max") == max(lengths)
    assert set(peek("module_episode_returns_mean")) == {"main_0"}
    for episode in episodes:
        for sa in episode.agent_episodes.values():
            logits = np.asarray(sa.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS))
            logp = np.asarray(sa.get_extra_model_outputs(Columns.ACTION_LOGP))
            actions = np.asarray(sa.get_actions())
            masks = np.asarray(sa.get_observations()["action_mask"])[:-1]
            assert masks[np.arange(len(actions)), actions].all()  # every move legal
            # The stored log-prob is the sampling distribution's over legal moves.
            legal_logits = np.where(masks > 0, logits, -np.inf)
            expected = legal_logits[np.arange(len(actions)), actions] - np.logaddexp.reduce(
                legal_logits, axis=1
            )
            np.testing.assert_allclose(logp, expected, rtol=1e-4, atol=1e-5)


def test_trainable_and_frozen_modules_share_a_step_and_records_are_made_once(ray_session):
    cfg, config = _config("tictactoe", mode="league")
    runner = BatchedLeagueEnvRunner(config=config, worker_index=0)
    players = sorted(runner.module.keys())
    assert MAIN_PLAYER in players
    frozen = snapshot_id(MAIN_PLAYER, 7)
    spec = snapshot_module_spec(cfg)
    weights = spec.build().get_state()
    seats = list(make_rllib_env(cfg.game_id).possible_agents)
    plan = MatchmakingPlan(
        learners=(MAIN_PLAYER,),
        learner_probs=(1.0,),
        opponents=((frozen,),),
        opponent_probs=((1.0,),),
        active_set=(frozen,),
    )
    runner.update_league(add={frozen: (spec, weights)}, remove=[], mapping=PlanMapping(plan, seats))
    episodes = runner.sample(num_timesteps=200)
    modules = {sa.module_id for e in episodes for sa in e.agent_episodes.values()}
    assert modules == {MAIN_PLAYER, frozen}
    matches = runner.drain_matches()
    assert sorted(m["episode_id"] for m in matches) == sorted(e.id_ for e in episodes)
    assert runner.drain_matches() == []  # each match leaves the runner once
    for match in matches:
        assert set(match["modules"].values()) == {MAIN_PLAYER, frozen}
        assert sum(match["returns"].values()) == pytest.approx(0.0)

    # A plan without the snapshot, the snapshot removed: games in flight are dropped,
    # every later game is main against main, and nothing names the removed module.
    self_plan = MatchmakingPlan(
        learners=(MAIN_PLAYER,),
        learner_probs=(1.0,),
        opponents=((MAIN_PLAYER,),),
        opponent_probs=((1.0,),),
    )
    left = runner.update_league(add={}, remove=[frozen], mapping=PlanMapping(self_plan, seats))
    assert frozen not in left
    later = runner.sample(num_timesteps=100)
    assert later
    assert {sa.module_id for e in later for sa in e.agent_episodes.values()} == {MAIN_PLAYER}


def test_runner_choice():
    cfg = TrainConfig.from_dict({"env": "tictactoe"})
    assert env_runner_class(cfg) is BatchedLeagueEnvRunner  # the default: auto
    assert env_runner_class(cfg.replace(env_runner="rllib")) is LeagueEnvRunner
    assert env_runner_class(cfg.replace(env_runner="batched")) is BatchedLeagueEnvRunner
    # Simultaneous-move games have their own batched runner (test_parallel_env_runner.py).
    rps = TrainConfig.from_dict({"env": "rps", "env_runner": "auto"})
    assert env_runner_class(rps) is BatchedSimultaneousEnvRunner
    assert env_runner_class(rps.replace(env_runner="batched")) is BatchedSimultaneousEnvRunner
    assert env_runner_class(rps.replace(env_runner="rllib")) is LeagueEnvRunner
    with pytest.raises(ConfigError, match="env_runner|runner"):
        TrainConfig.from_dict({"env": "tictactoe", "env_runner": "fast"})


def test_logging_only_the_last_windows_leaves_rllibs_windowed_metrics_unchanged():
    """`in_last_windows` keeps an item when any of its keys still has it among that
    key's last `window` values: RLlib's windowed stats (mean, min, max over a deque
    of the last `window` values per key) then reduce to exactly what logging every
    item gives, for the overall key and for keys that appear in few items."""
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    rng = np.random.default_rng(0)
    window = 5
    items = []
    for _ in range(200):
        keys = [
            None,
            *(
                ("module", m)
                for m in rng.choice(
                    ["main_0", "s1", "s2", "rare"], 2, replace=False, p=[0.5, 0.3, 0.19, 0.01]
                )
            ),
        ]
        items.append((keys, float(rng.normal())))
    every, kept = MetricsLogger(), MetricsLogger()

    def log(logger, keys, value):
        for key in keys:
            name = "all" if key is None else key[1]
            for reduce in ("mean", "min", "max"):
                logger.log_value((reduce, name), value, reduce=reduce, window=window)

    for keys, value in items:
        log(every, keys, value)
    keep = in_last_windows([keys for keys, _ in items], window)
    assert keep == sorted(keep) and len(keep) < len(items) / 4
    for index in keep:
        log(kept, *items[index])
    assert kept.reduce() == every.reduce()
    # A key met only long ago still gets its values logged.
    assert any(("module", "rare") in items[i][0] for i in keep)
