"""The teacher pull (rlmodules.teacher): -log pi(a scripted teacher's moves) where it rules moves out."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from learner_batches import train_batch

from envs.opponents import ConnectFourSearch
from envs.spaces import MASK_KEY, OBS_KEY
from league.config import ConfigError, TrainConfig
from league.core.config import LeagueConfig
from league.training.algorithm import MAIN_PLAYER, build_ppo_config
from rlmodules.reference_policy import batch_action_probs
from rlmodules.teacher import (
    TEACHER_COEFF_KEY,
    TEACHER_MASS_KEY,
    TEACHER_PROBS_COLUMN,
    TeacherTargets,
    teacher_mass_log,
)


def test_mass_counts_only_positions_where_the_teacher_rules_moves_out():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.6, 0.4, 1e-30]]))
    legal = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 0]])
    teacher = torch.tensor(
        [
            [0.0, 0.5, 0.5],  # rules out move 0: counts, mass 0.3 + 0.2
            [0.5, 0.5, 0.0],  # uniform over the legal moves: does not count
            [0.0, 0.0, 1.0],  # only an illegal move: no support, does not count
        ]
    )
    log_mass, informative = teacher_mass_log(logits, legal, teacher)
    assert informative.tolist() == [True, False, False]
    assert math.isclose(float(log_mass[0].exp()), 0.5, rel_tol=1e-5)
    assert torch.isfinite(log_mass).all()
    # The gradient raises the teacher's moves and lowers the one it rules out.
    logits = logits.clone().requires_grad_(True)
    log_mass, _ = teacher_mass_log(logits, legal, teacher)
    (-log_mass[0]).backward()
    assert logits.grad[0, 0] > 0 and (logits.grad[0, 1:] < 0).all()


def test_search_teacher_rules_out_all_but_the_winning_column():
    # Three of the player's stones stacked in column 0 (plane 0: the player to move).
    board = np.zeros((1, 6, 7, 2), dtype=np.float32)
    board[0, 3:, 0, 0] = 1
    board[0, 3:, 1, 1] = 1
    obs = {OBS_KEY: torch.as_tensor(board), MASK_KEY: torch.ones(1, 7)}
    probs = batch_action_probs(ConnectFourSearch(), obs)
    assert probs.shape == (1, 7) and probs[0, 0] == 1.0


def test_teacher_settings_are_checked():
    with pytest.raises(ValueError, match="teacher_coeff > 0 needs a teacher"):
        LeagueConfig(teacher_coeff=0.5)
    with pytest.raises(ValueError, match="teacher_coeff must be >= 0"):
        LeagueConfig(teacher="search", teacher_coeff=-1.0)
    with pytest.raises(ValueError, match="not a reference opponent name"):
        LeagueConfig(teacher="no such bot!", teacher_coeff=0.5)
    with pytest.raises(ConfigError, match="league.teacher: unknown opponent 'search'"):
        TrainConfig(env="tictactoe", league={"teacher": "search", "teacher_coeff": 0.5})
    league = {"teacher": "search", "teacher_coeff": 0.5}
    cfg = TrainConfig(env="connect_four", mode="selfplay", league=league)
    # Plain self-play never feels the league's teacher.
    assert TEACHER_COEFF_KEY not in build_ppo_config(cfg).learner_config_dict


TINY_LEAGUE = dict(
    env="connect_four",
    encoder="mlp",
    mode="league",
    num_env_runners=0,  # the teacher lives on the learner: the driver's runner samples
    num_envs_per_env_runner=8,
    train_batch_size=1000,
    minibatch_size=250,
    num_epochs=10,
    hidden_sizes=[32, 32],
    lr=1e-2,  # Adam moves as far whatever the loss's scale: few updates need a big step
    seed=5,
    eval_interval=0,
)


def _check_teacher_column(algo) -> None:
    """The teacher's search runs once per train batch (a connector column), not per
    minibatch per epoch; its column is the search player's answer on every row."""
    learner = algo.learner_group._learner
    pieces = [type(c) for c in learner._learner_connector.connectors]
    assert pieces.count(TeacherTargets) == 1
    # The main moves in about a third of these steps (its opponents fill the rest);
    # 900 keeps its row count far from the bound below whatever the draw.
    episodes = algo.env_runner.sample(num_timesteps=900)
    batch = train_batch(learner, episodes)
    obs, probs = batch[MAIN_PLAYER]["obs"], batch[MAIN_PLAYER][TEACHER_PROBS_COLUMN]
    rows = (obs[MASK_KEY] > 0).any(dim=-1)
    assert probs.shape == obs[MASK_KEY].shape and int(rows.sum()) > 100
    expected = batch_action_probs(
        ConnectFourSearch(), {OBS_KEY: obs[OBS_KEY][rows], MASK_KEY: obs[MASK_KEY][rows]}
    )
    assert np.allclose(probs[rows].numpy(), expected)
    assert (probs[~rows] == 0).all()


def _teacher_mass(coeff: float, iterations: int) -> float:
    league = {"teacher": "search", "teacher_coeff": coeff}
    algo = build_ppo_config(TrainConfig(**TINY_LEAGUE, league=league)).build_algo()
    try:
        _check_teacher_column(algo)  # in both runs, so their data paths stay alike
        for _ in range(iterations):
            result = algo.train()
    finally:
        algo.stop()
    return float(result["learners"][MAIN_PLAYER][TEACHER_MASS_KEY])


def test_a_stronger_teacher_puts_more_mass_on_its_moves(ray_session):
    """Same seed and data path; only the coefficient differs. Both runs also check
    the train batch's teacher column (`_check_teacher_column`)."""
    weak = _teacher_mass(1e-6, iterations=3)
    strong = _teacher_mass(5.0, iterations=3)
    assert 0 < weak < 0.5  # tactics are rare moves: a fresh player seldom finds them
    assert strong > weak + 0.2, (strong, weak)
