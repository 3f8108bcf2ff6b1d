"""Adapters: PettingZoo api tests, and a scripted game seen through RLlib's interface."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test

from envs.adapters import (
    OpenSpielGameEnv,
    SimultaneousGameEnv,
    TurnBasedGameEnv,
    make_rllib_env,
    rllib_env_class,
)
from envs.registry import REGISTRY_NAMES, UnknownGameError, game_layout, game_spaces, get_game


@pytest.mark.parametrize("name", [g for g in REGISTRY_NAMES if get_game(g).kind == "turn_based"])
def test_turn_based_games_pass_pettingzoo_api_test(name):
    api_test(get_game(name).make(), num_cycles=200)


def test_rps_with_masked_observations_passes_parallel_api_test():
    parallel_api_test(get_game("rps").make(), num_cycles=50)


def test_unknown_game_lists_known_games():
    with pytest.raises(UnknownGameError) as err:
        get_game("chess")
    for name in REGISTRY_NAMES:
        assert name in str(err.value)


def test_every_game_has_masked_dict_observations():
    for name in REGISTRY_NAMES:
        for side in game_layout(name).sides:
            obs_space, act_space = game_spaces(name, side)
            assert set(obs_space.spaces) == {"observation", "action_mask"}
            assert obs_space["action_mask"].shape == (act_space.n,)


def test_env_class_matches_game_kind():
    assert rllib_env_class("tictactoe") is TurnBasedGameEnv
    assert rllib_env_class("kuhn_poker") is OpenSpielGameEnv
    assert rllib_env_class("rps") is SimultaneousGameEnv
    with pytest.raises(ValueError):
        TurnBasedGameEnv({"game": "rps"})


def test_scripted_tictactoe_through_adapter():
    """player_1 takes the top row while player_2 plays 3, 4: obs, masks, rewards, ends."""
    env = make_rllib_env("tictactoe")
    obs, _ = env.reset(seed=0)
    assert list(obs) == ["player_1"]
    assert obs["player_1"]["action_mask"].tolist() == [1] * 9
    script = [("player_1", 0), ("player_2", 3), ("player_1", 1), ("player_2", 4)]
    for agent, action in script:
        assert list(obs) == [agent]
        obs, rewards, terminated, truncated, _ = env.step({agent: action})
        assert not terminated["__all__"] and not truncated["__all__"]
        assert all(r == 0 for r in rewards.values())
    # player_1 sees its own pieces on plane 0 and the opponent's on plane 1.
    planes = obs["player_1"]["observation"]
    assert planes[:, :, 0].flatten().tolist() == [1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert planes[:, :, 1].flatten().tolist() == [0, 0, 0, 1, 1, 0, 0, 0, 0]
    assert obs["player_1"]["action_mask"].tolist() == [0, 0, 1, 0, 0, 1, 1, 1, 1]
    obs, rewards, terminated, truncated, _ = env.step({"player_1": 2})
    assert terminated["__all__"]
    assert rewards == {"player_1": 1, "player_2": -1}


def test_rps_adapter_one_hot_observation_and_rewards():
    env = make_rllib_env("rps")
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"player_0", "player_1"}
    # Before any move, the observation is "none" (index 3).
    assert obs["player_0"]["observation"].tolist() == [0, 0, 0, 1]
    obs, rewards, terminated, _, _ = env.step({"player_0": 1, "player_1": 0})  # paper beats rock
    assert rewards["player_0"] == 1 and rewards["player_1"] == -1
    assert obs["player_0"]["observation"].tolist() == [1, 0, 0, 0]
    assert obs["player_1"]["observation"].tolist() == [0, 1, 0, 0]
    assert obs["player_0"]["action_mask"].tolist() == [1, 1, 1]
    assert not terminated["__all__"]


def test_connect_four_vertical_win_rewards():
    env = make_rllib_env("connect_four")
    obs, _ = env.reset(seed=0)
    rewards, terminated = {}, {"__all__": False}
    moves = [3, 0, 3, 0, 3, 0, 3]
    for i, col in enumerate(moves):
        agent = "player_0" if i % 2 == 0 else "player_1"
        assert list(obs) == [agent]
        obs, rewards, terminated, _, _ = env.step({agent: col})
    assert terminated["__all__"]
    assert rewards == {"player_0": 1, "player_1": -1}


def test_masks_track_full_connect_four_columns():
    env = make_rllib_env("connect_four")
    obs, _ = env.reset(seed=0)
    for i in range(6):  # fill column 2 alternating, no one wins
        agent = "player_0" if i % 2 == 0 else "player_1"
        obs, *_ = env.step({agent: 2})
    mask = np.asarray(next(iter(obs.values()))["action_mask"])
    assert mask.tolist() == [1, 1, 0, 1, 1, 1, 1]


def test_random_opening_moves_start_from_varied_legal_positions():
    env = TurnBasedGameEnv({"game": "tictactoe", "random_opening_moves": 2})
    pieces_seen, movers = set(), set()
    obs, _ = env.reset(seed=7)
    for _ in range(200):
        (agent,) = obs
        planes = obs[agent]["observation"]
        pieces = int(planes.sum())
        assert pieces <= 2
        assert obs[agent]["action_mask"].sum() == 9 - pieces  # the mask matches the board
        pieces_seen.add(pieces)
        movers.add(agent)
        obs, _ = env.reset()
    assert pieces_seen == {0, 1, 2} and movers == {"player_1", "player_2"}
    with pytest.raises(ValueError):
        TurnBasedGameEnv({"game": "tictactoe", "random_opening_moves": -1})


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


@pytest.mark.parametrize("name", ["tictactoe", "connect_four", "leduc_holdem"])
def test_turn_based_step_matches_rllibs_pettingzoo_env(name):
    """`TurnBasedGameEnv.step` reads state from the unwrapped game for speed; it must
    return exactly what RLlib's `PettingZooEnv.step` returns, move for move."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    ours, theirs = make_rllib_env(name), make_rllib_env(name)
    rng = np.random.default_rng(0)
    steps = 0
    for game in range(30):
        obs, _ = ours.reset(seed=game)
        obs_theirs, _ = theirs.reset(seed=game)
        assert _same(obs, obs_theirs)
        done = False
        while not done:
            agent = next(iter(obs))
            legal = np.flatnonzero(obs[agent]["action_mask"])
            action = {agent: int(rng.choice(legal))}
            result = ours.step(action)
            expected = PettingZooEnv.step(theirs, action)
            assert all(_same(r, e) for r, e in zip(result, expected, strict=True))
            obs, done = result[0], result[2]["__all__"] or result[3]["__all__"]
            steps += 1
            if not done:
                obs = {a: o for a, o in obs.items() if not (result[2][a] or result[3][a])}
    assert steps > 30


@pytest.mark.parametrize(
    "name",
    [
        "kuhn_poker",
        "leduc_poker",
        "kuhn_poker_3p",
        "leduc_poker_3p",
        "tiny_bridge_4p",
        "openspiel:goofspiel(num_cards=4)",
        "openspiel:tic_tac_toe",
    ],
)
def test_openspiel_env_matches_the_pettingzoo_path(name):
    """`OpenSpielGameEnv` plays pyspiel directly; for the same seeds and moves it returns
    exactly what `TurnBasedGameEnv` over shimmy's env returns, step for step: every
    seat's observation, mask, reward (AEC timing: paid when next observed), flags."""
    assert rllib_env_class(name) is OpenSpielGameEnv
    ours, theirs = OpenSpielGameEnv({"game": name}), TurnBasedGameEnv({"game": name})
    assert ours.observation_spaces == theirs.observation_spaces
    assert ours.action_spaces == theirs.action_spaces
    rng = np.random.default_rng(0)
    steps, returns = 0, 0.0
    for game in range(40):
        obs, _ = ours.reset(seed=game)
        assert _same(obs, theirs.reset(seed=game)[0])
        done = False
        while not done:
            agent = next(iter(obs))
            action = {agent: int(rng.choice(np.flatnonzero(obs[agent]["action_mask"])))}
            result, expected = ours.step(action), theirs.step(action)
            for got, want in zip(result, expected, strict=True):
                assert _same(got, want), (name, game, steps, got, want)
                assert list(got) == list(want)  # seats in the same order
            obs, done = result[0], result[2]["__all__"] or result[3]["__all__"]
            returns += sum(abs(r) for r in result[1].values())
            steps += 1
    assert steps > 40 and returns > 0  # games ended and paid something


def test_an_illegal_move_still_meets_pettingzoos_checks():
    """The hot path skips PettingZoo's move-checking wrappers for legal moves only:
    an illegal one still ends the game as TerminateIllegalWrapper rules."""
    env = make_rllib_env("tictactoe")
    obs, _ = env.reset(seed=0)
    first = next(iter(obs))
    env.step({first: 4})
    second = env.env.unwrapped.agent_selection
    env.env.observe(second)  # the mask the hot path would check
    _, rewards, terminated, _, _ = env.step({second: 4})  # the centre is taken
    assert terminated["__all__"]
    assert rewards[second] == -1


def test_move_checks_are_skipped_only_when_they_are_all_there_is():
    from pettingzoo.classic import tictactoe_v3
    from pettingzoo.utils.wrappers import BaseWrapper

    from envs.wrappers import game_below_move_checks

    wrapped = tictactoe_v3.env()
    assert game_below_move_checks(wrapped) is wrapped.unwrapped

    class CountingMoves(BaseWrapper):  # a user's wrapper that acts on every move
        pass

    assert game_below_move_checks(CountingMoves(tictactoe_v3.env())) is None


def test_chance_outcomes_are_drawn_by_their_probabilities():
    """`play_chance` deals until a seat is to move, each outcome as often as
    OpenSpiel's probabilities say (Kuhn poker: three cards, then two)."""
    import pyspiel

    from envs.openspiel import play_chance

    game = pyspiel.load_game("kuhn_poker")
    rng = np.random.default_rng(0)
    deals = Counter()
    draws = 6000
    for _ in range(draws):
        state = game.new_initial_state()
        play_chance(state, rng)
        assert not state.is_chance_node() and state.current_player() == 0
        deals[tuple(state.history())] += 1
    assert len(deals) == 6  # every ordered pair of distinct cards
    for count in deals.values():
        assert abs(count / draws - 1 / 6) < 0.02
