"""The league against remote learner actors (`num_learners=1`, and 2 data-parallel).

Everything the league does to learners goes through RLlib's LearnerGroup, never a
local learner object: weights for snapshots, resets, the learner-only modules and
their losses, checkpoints and resume. These tests run it all with the learner in
its own Ray actor (a quarter of a CPU, so it fits the session's 2 CPUs).
"""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import load_file

from league.config import TrainConfig
from league.snapshot import POLICY_PREFIX, WEIGHTS_FILE
from league.training.algorithm import build_ppo_config, trainable_players
from league.training.driver import LeagueDriver
from league.training.loop import train
from rlmodules.shared_value import SHARED_VF_ID
from rlmodules.world_model import WORLD_MODEL_ID

REMOTE = dict(
    env="tictactoe",
    num_env_runners=0,
    num_envs_per_env_runner=2,
    train_batch_size=300,
    minibatch_size=100,
    num_epochs=1,
    hidden_sizes=[16],
    num_learners=1,
    num_cpus_per_learner=0.25,
    shared_vf=True,
    world_model=True,
    curiosity_coeff=0.1,
    league={"snapshot_step_budget": 150},
)


def _weights(folder) -> dict[str, np.ndarray]:
    return load_file(str(folder / WEIGHTS_FILE))


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    keys = [k for k in a if k.startswith(POLICY_PREFIX)]
    return bool(keys) and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in keys)


def test_league_driver_snapshots_and_resets_through_a_remote_learner(ray_session, tmp_path):
    cfg = TrainConfig.from_dict(REMOTE)
    algo = build_ppo_config(cfg).build_algo()
    try:
        assert not algo.learner_group.is_local  # the learner is an actor
        players = set(trainable_players(cfg))
        assert set(algo.learner_group.get_weights()) == players | {SHARED_VF_ID, WORLD_MODEL_ID}
        driver = LeagueDriver(algo, cfg, tmp_path, seed=0)
        driver.seed_league()
        resets_checked = snapshots_checked = 0
        for iteration in range(1, 9):
            result = algo.train()
            # The learner-only modules trained on the remote learner, with their losses.
            assert "world_model_loss" in result["learners"][WORLD_MODEL_ID]
            assert "vf_loss" in result["learners"][SHARED_VF_ID]
            report = driver.step(iteration, result)
            now = driver.learner_weights(sorted(players))
            for sid in report.new_snapshots:
                player = driver.league.snapshots[sid].player
                if player in report.resets:
                    continue  # its learner weights changed again after the snapshot
                assert _same(_weights(tmp_path / "snapshots" / sid), now[player]), sid
                snapshots_checked += 1
            for player in report.resets:
                # Reset to its initial weights, a past snapshot or the current main
                # (`main_exploiter_reset_to: main`): the learner holds one of them.
                sources = [driver._initial_weights[player], now["main_0"]] + [
                    _weights(tmp_path / "snapshots" / sid) for sid in driver.league.snapshots
                ]
                assert any(_same(now[player], s) for s in sources), player
                resets_checked += 1
        assert snapshots_checked and resets_checked, (snapshots_checked, resets_checked)
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("mode", "learners", "algo"),
    # One remote learner (self-play), two data-parallel ones (league), each algorithm.
    [("selfplay", 1, "ppo"), ("league", 2, "ppo"), ("league", 2, "appo")],
)
def test_checkpoint_and_resume_with_a_remote_learner(ray_session, tmp_path, mode, learners, algo):
    cfg = TrainConfig.from_dict(
        {**REMOTE, "mode": mode, "run_dir": str(tmp_path / "r"), "stop_timesteps": 600}
        | {"eval_interval": 0, "checkpoint_interval": 1, "num_learners": learners, "algo": algo}
        | ({"shared_vf": False} if algo == "appo" else {})  # PPO's GAE feeds it
    )
    first = train(cfg, log=lambda line: None)
    assert first.iterations == 2 and first.checkpoint
    player = _weights(tmp_path / "r" / "players" / "main_0")
    lines: list[str] = []
    resumed = train(cfg.replace(stop_timesteps=1200), resume=True, log=lines.append)
    assert any(line.startswith("resumed") and "iteration 2" in line for line in lines), lines
    assert resumed.iterations == 4 and resumed.env_steps >= 1200
    # The player file written at the checkpoint came from the remote learner's weights,
    # and training went on from them (the weights moved).
    after = _weights(tmp_path / "r" / "players" / "main_0")
    assert not _same(player, after)
