"""The team's critic: in a team game the learner-only shared value function reads
every teammate's observation at the same step (MAPPO-style), never an opponent's,
on the learners only; a teammate out of the game reads zeros."""

from __future__ import annotations

import numpy as np
from learner_batches import train_batch
from ray.rllib.core.columns import Columns

from league.config import TrainConfig
from league.training.algorithm import MAIN_PLAYER, build_ppo_config, critic_groups
from rlmodules.shared_value import GLOBAL_OBS, SHARED_VF_ID

BATTLE = dict(
    env="battle",
    env_kwargs={"max_cycles": 8},
    mode="selfplay",
    num_env_runners=0,
    num_envs_per_env_runner=1,
    train_batch_size=16,
    minibatch_size=16,
    num_epochs=1,
    hidden_sizes=[16],
    conv_filters=[[4, 3, 2]],
    shared_vf=True,
    centralized_critic=True,
    eval_interval=0,
)


def planes(episode, seat: str, steps: int) -> np.ndarray:
    """A seat's first observation planes, flat, whether the episode is numpy or lists."""
    observed = episode.agent_episodes[seat].get_observations(slice(0, steps))
    if isinstance(observed, dict):
        return np.asarray(observed["observation"]).reshape(steps, -1)
    return np.stack([np.asarray(o["observation"]).reshape(-1) for o in observed])


def test_team_groups_are_teammates_own_seat_first():
    layout = TrainConfig(**BATTLE).layout
    groups = critic_groups(layout)
    assert groups["red_2"][0] == "red_2" and sorted(groups["red_2"]) == [
        f"red_{i}" for i in range(6)
    ]
    assert all(s.startswith("blue_") for s in groups["blue_0"])
    rps = TrainConfig(env="rps").layout
    assert critic_groups(rps) == {
        "player_0": ["player_0", "player_1"],
        "player_1": ["player_1", "player_0"],
    }


def test_team_critic_reads_teammates_on_battle(ray_session):
    cfg = TrainConfig(**BATTLE)
    algo = build_ppo_config(cfg).build_algo()
    try:
        learner = algo.learner_group._learner
        shared_vf = learner.module[SHARED_VF_ID].unwrapped()
        assert shared_vf.centralized and shared_vf.critic_width == 6
        episodes = algo.env_runner.sample(num_episodes=1)
        batch = train_batch(learner, episodes)[MAIN_PLAYER]
        own = batch[Columns.OBS]["observation"].float().reshape(len(batch[GLOBAL_OBS]), -1)
        width = own.shape[1]
        assert batch[GLOBAL_OBS].shape == (own.shape[0], 6 * width)
        np.testing.assert_array_equal(batch[GLOBAL_OBS][:, :width], own)
        # The teammates' blocks are their own observations of the same step.
        (episode,) = [e for e in episodes if "red_0" in e.agent_episodes]
        red_1 = planes(episode, "red_1", 1)
        rows = [i for i in range(own.shape[0]) if np.array_equal(own[i].numpy(), red_1[0])]
        assert rows, "red_1's first observation is in the batch"
        blocks = batch[GLOBAL_OBS][rows[0]].numpy().reshape(6, width)
        red_0 = planes(episode, "red_0", 1)
        assert any(np.array_equal(b, red_0[0]) for b in blocks[1:])
        assert algo.train()["learners"][MAIN_PLAYER]
    finally:
        algo.stop()
