"""Sample-ahead PPO (`sample_ahead`): runners sample the next batch during the update."""

from __future__ import annotations

import numpy as np
import pytest

from league.config import ConfigError, TrainConfig
from league.training.algorithm import MAIN_PLAYER, build_ppo_config
from league.training.driver import LeagueDriver
from league.training.sample_ahead import SAMPLE_AHEAD_TAG, SampleAheadPPO

AHEAD = dict(
    env="tictactoe",
    encoder="mlp",
    num_env_runners=1,
    num_envs_per_env_runner=16,
    train_batch_size=600,
    minibatch_size=200,
    num_epochs=2,
    hidden_sizes=[16],
    eval_interval=0,
    sample_ahead=True,
)


def test_the_next_batch_is_sampling_when_an_iteration_returns(ray_session):
    cfg = TrainConfig.from_dict({**AHEAD, "mode": "selfplay"})
    algo = build_ppo_config(cfg).build_algo()
    try:
        assert isinstance(algo, SampleAheadPPO)
        # One sync may wait behind a sample while the next is sent: neither is dropped.
        assert algo.config.max_requests_in_flight_per_env_runner == 2
        group = algo.env_runner_group
        before = algo.learner_group.get_weights()[MAIN_PLAYER]
        for _ in range(3):
            result = algo.train()
            # One sample request per runner is in flight while the driver moves on.
            assert group.num_in_flight_async_reqs(SAMPLE_AHEAD_TAG) == 1
            steps = result["env_runners"]["num_env_steps_sampled"]
            assert steps >= cfg.ppo.train_batch_size, steps
        after = algo.learner_group.get_weights()[MAIN_PLAYER]
        assert any(not np.array_equal(before[k], after[k]) for k in after), "nothing trained"
        # The new weights reach the runner right behind its sample in flight.
        group.fetch_ready_async_reqs(tags=SAMPLE_AHEAD_TAG, timeout_seconds=60)
        runner_weights = group.foreach_env_runner(
            lambda runner: runner.module[MAIN_PLAYER].get_state(), local_env_runner=False
        )[0]
        for name, value in runner_weights.items():
            np.testing.assert_array_equal(np.asarray(value), np.asarray(after[name]))
    finally:
        algo.stop()


def test_league_records_every_sampled_game_once_with_sampling_ahead(ray_session, tmp_path):
    cfg = TrainConfig.from_dict({**AHEAD, "mode": "league", "run_dir": str(tmp_path)})
    algo = build_ppo_config(cfg).build_algo()
    try:
        driver = LeagueDriver(algo, cfg, tmp_path, seed=0)
        episodes = matches = 0
        for iteration in range(1, 5):
            result = algo.train()
            report = driver.step(iteration, result)
            episodes += int(result["env_runners"]["num_episodes"])
            matches += report.matches
        # Matches of the batch sampled ahead are drained with the iteration that
        # started it, its episodes counted with the next: over a run they meet.
        group = algo.env_runner_group
        ahead = group.fetch_ready_async_reqs(tags=SAMPLE_AHEAD_TAG, timeout_seconds=60)
        episodes += sum(len(batch) for _, (batch, _) in ahead)
        matches += len(driver.drain(5))
        assert matches == episodes > 0
    finally:
        algo.stop()


def test_sampling_ahead_is_the_default_and_appo_cannot_turn_it_off():
    assert TrainConfig.from_dict({"env": "tictactoe"}).ppo.sample_ahead
    assert TrainConfig.from_dict({"env": "tictactoe", "algo": "appo"}).ppo.sample_ahead
    with pytest.raises(ConfigError, match="sample_ahead off needs --ppo.algo ppo"):
        TrainConfig.from_dict({"env": "tictactoe", "algo": "appo", "sample_ahead": False})
