"""Data-parallel learners (`num_learners >= 2`): whole games per learner, DDP in step.

The sharding is checked on real games from the league's env runner; the training
test runs two real learner actors (torch DDP over gloo) on a league with the
learner-only shared value function and world model, and checks that both learners
hold the same weights after every update, as DDP's all-reduce guarantees only
when every learner runs the same modules in the same steps.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from ray.rllib.utils.metrics import NUM_MODULE_STEPS_TRAINED

from league.config import TrainConfig
from league.core.ids import snapshot_id
from league.core.matchmaking import MatchmakingPlan
from league.training.algorithm import (
    build_appo_config,
    build_ppo_config,
    snapshot_module_spec,
    trainable_players,
)
from league.training.batched_env_runner import BatchedLeagueEnvRunner
from league.training.data_parallel import (
    WholeGameAPPOLearnerGroup,
    WholeGameLearnerGroup,
    WholeGameTrainingData,
    episode_module_steps,
    module_minibatches,
    shard_whole_games,
)
from league.training.env_runner import PlanMapping
from rlmodules.minibatches import MODULE_MINIBATCHES
from rlmodules.shared_value import SHARED_VF_ID
from rlmodules.world_model import WORLD_MODEL_ID

MAIN = "main_0"
EXPLOITER = "main_exploiter_0"


def _league_games(
    num_timesteps: int, rare_share: float = 0.1, frozen_share: float = 0.5
) -> tuple[list, list[str]]:
    """Real tictactoe games from the league's runner: the main against itself and,
    in about `rare_share` of games, against the main exploiter or (in `frozen_share`
    of those) a frozen snapshot."""
    cfg = TrainConfig.from_dict(
        {
            "env": "tictactoe",
            "mode": "league",
            "num_env_runners": 0,
            "num_envs_per_env_runner": 8,
            "hidden_sizes": [16],
        }
    )
    runner = BatchedLeagueEnvRunner(config=build_ppo_config(cfg), worker_index=0)
    frozen = snapshot_id(MAIN, 3)
    spec = snapshot_module_spec(cfg)
    plan = MatchmakingPlan(
        learners=(MAIN, EXPLOITER),
        learner_probs=(1.0, 0.0),
        opponents=((MAIN, EXPLOITER, frozen), (MAIN,)),
        opponent_probs=(
            (1.0 - rare_share, rare_share * (1.0 - frozen_share), rare_share * frozen_share),
            (1.0,),
        ),
        active_set=(frozen,),
    )
    seats = ["player_1", "player_2"]
    runner.update_league(
        add={frozen: (spec, spec.build().get_state())}, remove=[], mapping=PlanMapping(plan, seats)
    )
    return runner.sample(num_timesteps=num_timesteps), trainable_players(cfg)


def _steps(games) -> Counter[str]:
    steps: Counter[str] = Counter()
    for game in games:
        steps.update(episode_module_steps(game))
    return steps


def test_whole_games_spread_every_player_over_every_learner(ray_session):
    games, players = _league_games(1500)
    played = set(_steps(games)) & set(players)
    assert {MAIN, EXPLOITER} <= played
    shards = shard_whole_games(games, 2, players)
    # No game is cut: each shard holds the runner's own episode objects, every game
    # lands somewhere, and a game appears twice only when copied for a rare player.
    placed = Counter(id(g) for shard in shards for g in shard)
    assert set(placed) == {id(g) for g in games}
    for shard in shards:
        assert set(_steps(shard)) & set(players) == played
    lengths = [sum(len(g) for g in shard) for shard in shards]
    assert abs(lengths[0] - lengths[1]) <= 2 * max(len(g) for g in games)
    # Frozen snapshots are not trained, so they need not be everywhere.
    assert shard_whole_games(games, 3, [MAIN])[2]


def test_a_player_with_one_game_is_copied_to_every_learner(ray_session):
    games, players = _league_games(600, rare_share=0.0)
    # Every game against the exploiter, so there is always one (the runner is unseeded).
    lone, _ = _league_games(60, rare_share=1.0, frozen_share=0.0)
    lone = [g for g in lone if EXPLOITER in _steps([g])][:1]
    assert lone
    shards = shard_whole_games(games + lone, 3, players)
    assert all(lone[0] in shard for shard in shards)
    assert all(_steps(shard)[EXPLOITER] == _steps(lone)[EXPLOITER] for shard in shards)


def test_every_learner_is_told_the_same_minibatch_counts(ray_session):
    games, players = _league_games(1200)
    data = WholeGameTrainingData(episodes=games, required_modules=frozenset(players))
    parts = data.shard(2, minibatch_size=128, num_epochs=2)
    assert len(parts) == 2
    counts = [kwargs[MODULE_MINIBATCHES] for _, kwargs in parts]
    assert counts[0] == counts[1]
    total = _steps(games)
    expected = module_minibatches(games, 2, 128)
    assert counts[0][MAIN] == expected[MAIN] == max(1, round(total[MAIN] / 256))
    for shard, _ in parts:
        rows = _steps(shard.episodes)
        assert all(1 <= counts[0][m] <= rows[m] for m in rows)
    # One learner: RLlib's own sharding (nothing to split).
    assert len(data.shard(1, minibatch_size=128)) == 1


def _learner_modules(group: WholeGameLearnerGroup) -> list[dict]:
    calls = group.foreach_learner(lambda learner: learner.get_state()["rl_module"])
    return [call.get() for call in calls]


def _assert_same_weights(states: list[dict], module_ids: list[str]) -> None:
    assert len(states) == 2
    for module_id in module_ids:
        a, b = states[0][module_id], states[1][module_id]
        assert a.keys() == b.keys()
        for name in a:  # DDP kept both learners' copies identical
            np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]))


def test_ppo_league_trains_on_two_data_parallel_learners(ray_session):
    cfg = TrainConfig.from_dict(
        {
            "env": "tictactoe",
            "mode": "league",
            "num_env_runners": 0,
            "num_envs_per_env_runner": 8,
            "train_batch_size": 400,
            "minibatch_size": 50,
            "num_epochs": 2,
            "hidden_sizes": [16],
            "num_learners": 2,
            "num_cpus_per_learner": 0.5,
            "shared_vf": True,
            "world_model": True,
        }
    )
    algo = build_ppo_config(cfg).build_algo()
    try:
        group = algo.learner_group
        assert isinstance(group, WholeGameLearnerGroup) and len(group) == 2
        players = trainable_players(cfg)
        before = group.get_weights()
        for _ in range(2):
            result = algo.train()
            _assert_same_weights(_learner_modules(group), [*players, SHARED_VF_ID, WORLD_MODEL_ID])
        learners = result["learners"]
        assert learners[MAIN][NUM_MODULE_STEPS_TRAINED] > 0
        assert "vf_loss" in learners[SHARED_VF_ID]
        assert "world_model_loss" in learners[WORLD_MODEL_ID]
        after = group.get_weights()
        changed = [
            name
            for name in after[MAIN]
            if not np.array_equal(np.asarray(after[MAIN][name]), np.asarray(before[MAIN][name]))
        ]
        assert changed, "the main did not train"
    finally:
        algo.stop()


def test_appo_league_trains_on_two_data_parallel_learners_in_step(ray_session):
    """APPO's learners update in background threads: every learner must get every
    batch (whole games, every player) and apply weight writes at the same step."""
    cfg = TrainConfig.from_dict(
        {
            "env": "tictactoe",
            "mode": "league",
            "algo": "appo",
            "num_env_runners": 0,
            "num_envs_per_env_runner": 8,
            "train_batch_size": 400,
            "hidden_sizes": [16],
            "num_learners": 2,
            "num_cpus_per_learner": 0.5,
            "world_model": True,
        }
    )
    algo = build_appo_config(cfg).build_algo()
    try:
        group = algo.learner_group
        assert isinstance(group, WholeGameAPPOLearnerGroup) and len(group) == 2
        assert algo.config.train_batch_size_per_learner == 200
        assert not algo.config.use_circular_buffer  # random reuse puts learners out of step
        players = trainable_players(cfg)
        before = group.get_weights()
        for _ in range(4):
            algo.train()
        # A league reset writes one player's weights while the threads may be busy.
        zeros = {name: np.zeros_like(v) for name, v in before[EXPLOITER].items()}
        group.set_weights({EXPLOITER: zeros})
        states = _learner_modules(group)
        for state in states:
            assert all(not np.asarray(v).any() for v in state[EXPLOITER].values())
        for _ in range(4):
            algo.train()
        group.foreach_learner(lambda learner: learner.wait_for_queued_updates())
        _assert_same_weights(_learner_modules(group), [*players, WORLD_MODEL_ID])
        after = group.get_weights()
        assert any(
            not np.array_equal(np.asarray(after[MAIN][n]), np.asarray(before[MAIN][n]))
            for n in after[MAIN]
        ), "the main did not train"
        assert any(np.asarray(v).any() for v in after[EXPLOITER].values()), (
            "the exploiter did not train after its reset"
        )
    finally:
        algo.stop()
