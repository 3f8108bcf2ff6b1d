"""Per-module epochs: each player gets `num_epochs` passes over its own rows.

RLlib's cyclic iterator gave every module as many updates as the module with the
most rows; in a league that over-trained the exploiters and made every update pay
for all players. Unit tests on plain SampleBatches, then a real league learner.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from learner_batches import train_batch
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics import NUM_MODULE_STEPS_TRAINED

from league.config import TrainConfig
from league.training.algorithm import build_ppo_config
from league.training.driver import LeagueDriver
from rlmodules.minibatches import PerModuleEpochIterator, minibatch_bounds


def _batch(rows: dict[str, int]) -> MultiAgentBatch:
    return MultiAgentBatch(
        {mid: SampleBatch({"row": np.arange(n)}) for mid, n in rows.items()},
        env_steps=sum(rows.values()),
    )


@pytest.mark.parametrize(
    ("rows", "size", "parts"), [(4000, 500, 8), (4013, 500, 8), (120, 500, 1), (760, 500, 2)]
)
def test_bounds_split_an_epoch_into_near_equal_minibatches(rows, size, parts):
    bounds = minibatch_bounds(rows, size)
    assert bounds[0] == 0 and bounds[-1] == rows and len(bounds) == parts + 1
    sizes = np.diff(bounds)
    assert sizes.max() - sizes.min() <= 1


def test_every_row_of_every_module_is_seen_num_epochs_times():
    rows = {"main_0": 3600, "main_exploiter_0": 210, "league_exploiter_0": 190}
    iterator = PerModuleEpochIterator(_batch(rows), num_epochs=3, minibatch_size=500)
    seen = {mid: Counter() for mid in rows}
    steps = Counter()
    for minibatch in iterator:
        for mid, module_batch in minibatch.policy_batches.items():
            steps[mid] += 1
            seen[mid].update(module_batch["row"].tolist())
    for mid, n in rows.items():
        assert sorted(seen[mid]) == list(range(n))
        assert set(seen[mid].values()) == {3}
    # The main takes round(3600 / 500) = 7 minibatches per epoch; each exploiter one.
    assert steps == {"main_0": 21, "main_exploiter_0": 3, "league_exploiter_0": 3}
    assert iterator.steps_per_module() == dict(steps)


def test_one_module_gets_ppos_usual_schedule():
    minibatches = list(
        PerModuleEpochIterator(_batch({"main_0": 4000}), num_epochs=2, minibatch_size=500)
    )
    assert [len(mb.policy_batches["main_0"]) for mb in minibatches] == [500] * 16


def test_empty_module_batch_is_refused():
    with pytest.raises(ValueError, match="module 'main_exploiter_0' is empty"):
        PerModuleEpochIterator(_batch({"main_0": 10, "main_exploiter_0": 0}), minibatch_size=5)


def test_league_learner_trains_each_player_num_epochs_over_its_rows(ray_session, tmp_path):
    """A real league learner: module steps trained = num_epochs x that player's rows."""
    cfg = TrainConfig.from_dict(
        dict(
            env="tictactoe",
            num_env_runners=0,  # the driver's own runner samples: builds in 0.1 s
            num_envs_per_env_runner=8,
            train_batch_size=600,
            minibatch_size=200,
            num_epochs=3,
            hidden_sizes=[16],
            league={"main_learner_share": 0.8},
        )
    )
    algo = build_ppo_config(cfg).build_algo()
    try:
        driver = LeagueDriver(algo, cfg, tmp_path, seed=0)
        driver.seed_league()
        episodes = algo.env_runner.sample(num_timesteps=600)
        learner = algo.learner_group._learner
        batch = train_batch(learner, episodes)
        rows = {mid: len(next(iter(b.values()))) for mid, b in batch.items()}
        assert len(rows) >= 2 and "main_0" in rows  # the main and at least one exploiter
        results = learner.update(episodes=episodes, num_epochs=3, minibatch_size=200)
        for mid, n in rows.items():
            assert results[mid][NUM_MODULE_STEPS_TRAINED].peek() == 3 * n, mid
    finally:
        algo.stop()
