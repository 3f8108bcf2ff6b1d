"""Reference opponents as frozen league members: scripted bots (minimax, a user's bot by
import path) that the main plays, with payoff rows and ratings, always on env runners."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

from envs import tictactoe_rules as ttt
from envs.opponents import MinimaxTicTacToe, optimal_moves
from envs.registry import game_spaces
from envs.spaces import MASK_KEY, OBS_KEY
from league.config import ConfigError, TrainConfig
from league.core import League, LeagueConfig, MatchRecord, is_reference_id, reference_id
from league.core.ids import reference_name
from league.core.matchmaking import next_plan
from league.training.algorithm import build_ppo_config, trainable_players
from league.training.driver import LeagueDriver
from league.training.env_runner import LeagueEnvRunner
from rlmodules.reference_policy import reference_policy_spec

MIX = dict(
    main_self_play_prob=0.5,
    main_pfsp_prob=0.2,
    main_forgotten_prob=0.0,
    main_exploiter_prob=0.1,
    main_reference_prob=0.2,
)


def test_reference_ids_are_their_own_kind():
    assert reference_id("minimax") == "ref=minimax"
    assert reference_id("my_bots.c4:Greedy") == "ref=my_bots.c4=Greedy"
    assert is_reference_id("ref=minimax")
    for bad in ("main_0", "main_0@1", "ref=", "ref=a b", "minimax", "ref:minimax"):
        assert not is_reference_id(bad)
    assert reference_name("ref=my_bots.c4=Greedy") == "my_bots.c4:Greedy"


def test_every_kind_of_module_id_is_a_valid_rllib_module_id():
    """RLlib refuses `<>:"/\\|?` in module ids (and warns on every one it meets)."""
    from ray.rllib.core.rl_module import validate_module_id

    for module_id in (
        "main_0",
        "main_exploiter_0@12",
        "adversary.main_0@3",
        reference_id("minimax"),
        reference_id("my_bots.c4:Greedy"),
    ):
        validate_module_id(module_id, error=True)


def test_a_state_stored_with_legacy_reference_ids_is_upgraded():
    league = League(LeagueConfig(reference_opponents=["minimax"], **MIX))
    records = [
        MatchRecord(f"e{k}", {"a": "main_0", "b": "ref=minimax"}, {"a": "loss", "b": "win"}, 5, 1)
        for k in range(4)
    ]
    league.record(records)
    legacy = json.loads(json.dumps(league.get_state()).replace("ref=minimax", "ref:minimax"))
    assert "ref:minimax" in json.dumps(legacy)
    restored = League.from_state(league.cfg, legacy)
    assert restored.references == ("ref=minimax",)
    assert (
        restored.payoff.games("main_0", "ref=minimax")
        == league.payoff.games("main_0", "ref=minimax")
        > 3
    )
    assert restored.ratings.rating("ref=minimax") == league.ratings.rating("ref=minimax")
    with pytest.raises(ValueError, match="not a reference opponent name"):
        reference_id("../etc")


def test_config_refuses_bad_reference_lists():
    with pytest.raises(ValueError, match="named one twice|names one twice"):
        LeagueConfig(reference_opponents=["minimax", "minimax"], **MIX)
    with pytest.raises(ValueError, match="must sum to 1"):
        LeagueConfig(reference_opponents=["minimax"], main_reference_prob=0.2)
    with pytest.raises(ValueError, match="not a reference opponent name"):
        LeagueConfig(reference_opponents=["rm -rf"], **MIX)


def test_train_config_checks_the_opponent_exists_for_the_game():
    league = {"reference_opponents": ["search"], **MIX}
    with pytest.raises(
        ConfigError, match="unknown opponent 'search' for game 'tictactoe'; valid opponents"
    ):
        TrainConfig.from_dict({"env": "tictactoe", "league": league})
    league["reference_opponents"] = ["tests.no_such_module:Bot"]
    with pytest.raises(ConfigError, match="cannot import module 'tests.no_such_module'"):
        TrainConfig.from_dict({"env": "tictactoe", "league": league})
    league["reference_opponents"] = ["tests.test_reference_opponents:not_a_policy"]
    with pytest.raises(ConfigError, match="has no action_probs"):
        TrainConfig.from_dict({"env": "tictactoe", "league": league})
    league["reference_opponents"] = ["tests.test_reference_opponents:LowestCell"]
    cfg = TrainConfig.from_dict({"env": "tictactoe", "league": league})
    assert cfg.league.reference_ids() == ("ref=tests.test_reference_opponents=LowestCell",)


def not_a_policy() -> object:
    return object()


class LowestCell:
    """A user's bot: always the lowest legal cell."""

    def action_probs(self, obs):
        probs = np.zeros(len(obs[MASK_KEY]))
        probs[int(np.flatnonzero(obs[MASK_KEY])[0])] = 1.0
        return probs


def test_only_mains_play_references_and_they_are_always_loaded():
    cfg = LeagueConfig(reference_opponents=["minimax"], active_set_size=1, **MIX)
    league = League(cfg)
    for iteration in range(3):
        league.take_snapshot("main_0", iteration)
    active, plan = next_plan(league, np.random.default_rng(0))
    assert active[0] == "ref=minimax"
    assert len([m for m in active if not is_reference_id(m)]) == 1  # the budget is snapshots'
    main = plan.opponent_distribution("main_0")
    assert main["ref=minimax"] == pytest.approx(0.2)
    for player in ("main_exploiter_0", "league_exploiter_0"):
        assert "ref=minimax" not in plan.opponent_distribution(player)


def test_reference_matches_enter_payoff_and_ratings_and_survive_state():
    cfg = LeagueConfig(reference_opponents=["minimax"], **MIX)
    league = League(cfg)
    records = [
        MatchRecord(f"e{k}", {"a": "main_0", "b": "ref=minimax"}, {"a": "loss", "b": "win"}, 5, 1)
        for k in range(10)
    ]
    assert league.record(records) == 10
    assert league.payoff.games("main_0", "ref=minimax") > 9
    assert league.payoff.win_rate("ref=minimax", "main_0") == pytest.approx(1.0)
    rating = league.ratings.rating("ref=minimax")
    assert rating > cfg.elo_initial
    restored = League.from_state(cfg, league.get_state())
    assert restored.ratings.rating("ref=minimax") == rating
    assert restored.references == ("ref=minimax",)
    with pytest.raises(ValueError, match="not a snapshot in the league"):
        restored.retire(["ref=minimax"])


def test_reference_module_plays_the_bot_and_never_an_illegal_move():
    obs_space, act_space = game_spaces("tictactoe")
    module = reference_policy_spec("minimax", "tictactoe", obs_space, act_space).build()
    assert not list(module.parameters())
    rng = np.random.default_rng(0)
    boards, observations = [], []
    for _ in range(16):
        board = ttt.EMPTY_BOARD
        for _ in range(int(rng.integers(0, 5))):
            board = ttt.apply_move(board, int(rng.choice(ttt.legal_moves(board))))
        if ttt.is_terminal(board):
            continue
        boards.append(board)
        observations.append(ttt.encode_obs(board))
    batch = {
        Columns.OBS: {
            OBS_KEY: torch.from_numpy(np.stack([o[OBS_KEY] for o in observations])),
            MASK_KEY: torch.from_numpy(np.stack([o[MASK_KEY] for o in observations])),
        }
    }
    logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    probs = torch.softmax(logits, dim=-1).numpy()
    minimax = MinimaxTicTacToe()
    for board, obs, row in zip(boards, observations, probs, strict=True):
        np.testing.assert_allclose(row, minimax.action_probs(obs), atol=1e-6)
        assert int(np.argmax(row)) in optimal_moves(board)
        assert row[obs[MASK_KEY] == 0].sum() == 0.0


@pytest.mark.parametrize("env_runner", ["batched", "rllib"])
def test_league_with_minimax_member_plays_it_on_runners(ray_session, tmp_path, env_runner):
    cfg = TrainConfig.from_dict(
        dict(
            env="tictactoe",
            env_runner=env_runner,
            num_env_runners=1,
            num_envs_per_env_runner=4,
            train_batch_size=400,
            minibatch_size=200,
            num_epochs=1,
            hidden_sizes=[16],
            random_opening_moves=0,
            league={
                "reference_opponents": ["minimax"],
                "main_learner_share": 1.0,
                "main_self_play_prob": 0.0,
                "main_pfsp_prob": 0.0,
                "main_forgotten_prob": 0.0,
                "main_exploiter_prob": 0.0,
                "main_reference_prob": 1.0,
            },
        )
    )
    algo = build_ppo_config(cfg).build_algo()
    try:
        driver = LeagueDriver(algo, cfg, tmp_path, seed=0)
        driver.seed_league()
        records = []
        for iteration in range(1, 3):
            records += driver.step(iteration, algo.train()).records
        # As on --resume: the stored state puts the reference back in the active set.
        driver.set_state(driver.get_state())
        assert driver.active_set[0] == "ref=minimax"
        holdings = algo.env_runner_group.foreach_env_runner(
            LeagueEnvRunner.module_ids, local_env_runner=False
        )
        learner_modules = set(algo.learner_group.get_weights())
    finally:
        algo.stop()
    assert all("ref=minimax" in modules for _, modules in holdings)
    assert learner_modules == set(trainable_players(cfg))
    vs_minimax = [r for r in records if "ref=minimax" in r.modules.values()]
    assert len(vs_minimax) >= 20
    # Perfect play never loses: the bot really plays on the runner.
    for r in vs_minimax:
        seat = next(s for s, m in r.modules.items() if m == "ref=minimax")
        assert r.outcomes[seat] != "loss"
    assert driver.league.payoff.games("ref=minimax", "main_0") > 0
