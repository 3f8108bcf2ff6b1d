"""A learner on a GPU (`num_gpus_per_learner`): the training test runs only where
CUDA is present; elsewhere, a GPU learner on a local Ray instance is refused.

League mode with both learner-only modules (shared value function, world model
with curiosity), whose connectors and losses create tensors of their own: every
one must be on the module's device, or the update fails with a device mismatch.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from league.config import TrainConfig
from league.training.algorithm import build_ppo_config, trainable_players
from league.training.driver import LeagueDriver
from rlmodules.shared_value import SHARED_VF_ID
from rlmodules.world_model import WORLD_MODEL_ID

needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA: a learner on a GPU"
)


def module_devices(algo) -> dict[str, str]:
    """Each learner module's device, asked of the learner wherever it runs."""

    # Nested, so Ray pickles it by value (remote learners cannot import tests/).
    def devices(learner) -> dict[str, str]:
        return {
            mid: str(next(learner.module[mid].parameters()).device) for mid in learner.module.keys()
        }

    (result,) = [r.get() for r in algo.learner_group.foreach_learner(devices)]
    return result


@needs_cuda
@pytest.mark.parametrize("num_learners", [0, 1])
def test_league_trains_two_iterations_on_one_gpu(ray_session, tmp_path, num_learners):
    if ray_session.cluster_resources().get("GPU", 0) < 1:
        pytest.skip("needs CUDA: the session's Ray instance sees no GPU")
    cfg = TrainConfig.from_dict(
        dict(
            env="tictactoe",
            num_env_runners=0,
            num_envs_per_env_runner=2,
            train_batch_size=300,
            minibatch_size=100,
            num_epochs=1,
            hidden_sizes=[16],
            num_learners=num_learners,
            num_cpus_per_learner=0,
            num_gpus_per_learner=1,
            shared_vf=True,
            world_model=True,
            curiosity_coeff=0.1,
            league={"snapshot_step_budget": 150},
        )
    )
    algo = build_ppo_config(cfg).build_algo()
    try:
        devices = module_devices(algo)
        expected = set(trainable_players(cfg)) | {SHARED_VF_ID, WORLD_MODEL_ID}
        assert set(devices) == expected
        assert all(d.startswith("cuda") for d in devices.values()), devices
        driver = LeagueDriver(algo, cfg, tmp_path, seed=0)
        driver.seed_league()
        for iteration in (1, 2):
            result = algo.train()
            driver.step(iteration, result)
            for mid, key in ((WORLD_MODEL_ID, "world_model_loss"), (SHARED_VF_ID, "vf_loss")):
                assert math.isfinite(float(result["learners"][mid][key]))
        # Weights come back to the driver as numpy, whatever the learner's device.
        weights = driver.learner_weights(["main_0"])["main_0"]
        assert all(isinstance(v, np.ndarray) for v in weights.values())
        assert len(driver.league.snapshots) >= 2
    finally:
        algo.stop()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without")
def test_a_gpu_learner_without_a_gpu_is_refused_in_one_line(tmp_path):
    """A local Ray instance never grows a GPU: refused, not a learner pending forever."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run(
        [sys.executable, "-m", "league.cli", "train", "--run-dir", str(tmp_path / "r")]
        + [
            "--resources.num-learners",
            "1",
            "--resources.num-gpus-per-learner",
            "1",
            "--resources.num-cpus",
            "1",
        ]
        + ["--no-run.dashboard", "--stop-timesteps", "100"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("league: error:")]
    assert errors == ["league: error: num_gpus_per_learner 1 but this machine has 0 GPUs"]
    assert not (tmp_path / "r").exists()  # refused before anything was written
