"""A learner on a GPU (`num_gpus_per_learner`): runs only where CUDA is present.

League mode with both learner-only modules (shared value function, world model
with curiosity), whose connectors and losses create tensors of their own: every
one must be on the module's device, or the update fails with a device mismatch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from league.config import TrainConfig
from league.training.algorithm import build_ppo_config, trainable_players
from league.training.driver import LeagueDriver
from rlmodules.shared_value import SHARED_VF_ID
from rlmodules.world_model import WORLD_MODEL_ID

pytestmark = pytest.mark.skipif(
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
