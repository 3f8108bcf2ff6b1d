"""Reference opponents and rules helpers, checked against the real PettingZoo envs."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from pettingzoo.classic import connect_four_v3, tictactoe_v3

from envs import tictactoe_rules as ttt
from envs.opponents import (
    ConnectFourSearch,
    MinimaxTicTacToe,
    Policy,
    RandomPlayer,
    choose_action,
    make_opponent,
    reference_opponents,
)
from envs.registry import REGISTRY_NAMES

Obs = Mapping[str, np.ndarray]


# --- helpers ---------------------------------------------------------------


def other(env, agent: str) -> str:
    """The agent that is not ``agent``."""
    return next(a for a in env.possible_agents if a != agent)


def random_legal(obs: Obs, rng: np.random.Generator) -> int:
    """A uniformly random legal action, independent of the module under test."""
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


def play_game(env, policies: Mapping[str, Policy], rng: np.random.Generator) -> dict[str, float]:
    """Play one game through PettingZoo; return each agent's final reward."""
    env.reset()
    while not any(env.terminations.values()):
        agent = env.agent_selection
        obs = env.observe(agent)
        env.step(choose_action(policies[agent].action_probs(obs), rng, greedy=False))
    rewards = dict(env.rewards)
    assert sum(rewards.values()) == 0
    return rewards


def rewards_against_random(env, seat: str, policy: Policy, n_games: int, seed: int) -> list[float]:
    """``policy``'s reward in ``seat`` over ``n_games`` against RandomPlayer in every other seat."""
    rng = np.random.default_rng(seed)
    policies = {a: RandomPlayer() for a in env.possible_agents}
    policies[seat] = policy
    return [play_game(env, policies, rng)[seat] for _ in range(n_games)]


def random_positions(make_env, n_games: int, seed: int) -> list[Obs]:
    """Observations of the player to move along random games (both seats)."""
    rng = np.random.default_rng(seed)
    env = make_env()
    positions = []
    for _ in range(n_games):
        env.reset()
        while not any(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            positions.append(obs)
            env.step(random_legal(obs, rng))
    return positions


def assert_valid_probs(probs: np.ndarray, mask: np.ndarray) -> None:
    """Probabilities over all actions, summing to 1, exactly 0 where illegal."""
    assert probs.dtype == np.float64
    assert probs.shape == mask.shape
    assert np.all(probs >= 0)
    assert np.all(probs[mask == 0] == 0)
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)


def connect_four_after(moves: Sequence[int]):
    """A fresh connect_four_v3 env with ``moves`` (columns) already played."""
    env = connect_four_v3.env()
    env.reset()
    for col in moves:
        assert not any(env.terminations.values()), "position ended early"
        env.step(col)
    return env


def mover_wins_with(moves: Sequence[int], col: int) -> bool:
    """Whether playing ``col`` after ``moves`` wins for the player to move."""
    env = connect_four_after(moves)
    mover = env.agent_selection
    env.step(col)
    return env.rewards[mover] == 1


def legal_cols(env) -> list[int]:
    return [int(c) for c in np.flatnonzero(env.observe(env.agent_selection)["action_mask"])]


def support(probs: np.ndarray) -> set[int]:
    return {int(a) for a in np.flatnonzero(probs)}


# --- independent tic-tac-toe solver (absolute X/O boards) -----------------

_TTT_LINES = (
    [[3 * r + c for c in range(3)] for r in range(3)]
    + [[3 * r + c for r in range(3)] for c in range(3)]
    + [[0, 4, 8], [2, 4, 6]]
)


def _line_owner(board: str) -> str | None:
    for line in _TTT_LINES:
        marks = {board[i] for i in line}
        if len(marks) == 1 and marks != {"."}:
            return marks.pop()
    return None


@functools.cache
def solved_value(board: str, mark: str) -> int:
    """+1/0/-1 for ``mark`` to move on an absolute board like 'X.O......'."""
    owner = _line_owner(board)
    if owner is not None:
        return 1 if owner == mark else -1
    if "." not in board:
        return 0
    nxt = "O" if mark == "X" else "X"
    return max(
        -solved_value(board[:i] + mark + board[i + 1 :], nxt)
        for i, v in enumerate(board)
        if v == "."
    )


def absolute_board(obs: Obs) -> tuple[str, str]:
    """(absolute board, mark to move) from a mover's-view tic-tac-toe obs."""
    planes = obs["observation"].reshape(9, 2)
    mine, theirs = int(planes[:, 0].sum()), int(planes[:, 1].sum())
    mark, opp = ("X", "O") if mine == theirs else ("O", "X")
    board = "".join(mark if planes[i, 0] else opp if planes[i, 1] else "." for i in range(9))
    return board, mark


# --- tic-tac-toe rules vs PettingZoo ---------------------------------------


@pytest.mark.parametrize("action", range(9))
def test_action_maps_row_major_to_observation_cell(action: int) -> None:
    env = tictactoe_v3.env()
    env.reset()
    env.step(action)
    seen_by_second = env.observe("player_2")["observation"]
    assert [tuple(c) for c in np.argwhere(seen_by_second[:, :, 1])] == [(action // 3, action % 3)]
    mine = ttt.encode_obs(ttt.apply_move(ttt.EMPTY_BOARD, action))
    np.testing.assert_array_equal(mine["observation"], seen_by_second)


def test_rules_reproduce_pettingzoo_observations_and_outcomes() -> None:
    rng = np.random.default_rng(0)
    env = tictactoe_v3.env()
    outcomes = set()
    for _ in range(300):
        env.reset()
        board = ttt.EMPTY_BOARD
        while True:
            mover = env.agent_selection
            env_obs = env.observe(mover)
            mine = ttt.encode_obs(board)
            for key in ("observation", "action_mask"):
                assert mine[key].dtype == np.int8
                np.testing.assert_array_equal(mine[key], env_obs[key])
            waiting = env.observe(other(env, mover))["observation"]
            flipped = ttt.encode_obs(tuple(-v for v in board))["observation"]
            np.testing.assert_array_equal(flipped, waiting)
            assert ttt.decode_obs(env_obs) == board

            action = random_legal(env_obs, rng)
            env.step(action)
            board = ttt.apply_move(board, action)
            env_over = all(env.terminations.values())
            assert ttt.is_terminal(board) == env_over
            if env_over:
                break
        # The board is now seen by the player who did NOT make the last move.
        np.testing.assert_array_equal(
            ttt.encode_obs(board)["observation"],
            env.observe(env.agent_selection)["observation"],
        )
        assert ttt.legal_moves(board) == ()
        assert env.rewards[mover] == -ttt.winner(board)
        outcomes.add(ttt.winner(board))
    assert outcomes == {-1, 0}  # wins for the last mover and draws both occurred


def test_apply_move_refuses_occupied_cell() -> None:
    board = ttt.apply_move(ttt.EMPTY_BOARD, 4)
    with pytest.raises(ValueError, match="illegal"):
        ttt.apply_move(board, 4)


# --- all opponents: legal probabilities ------------------------------------


def test_tictactoe_opponents_only_put_mass_on_legal_actions() -> None:
    positions = random_positions(tictactoe_v3.env, n_games=150, seed=1)
    seats = {int(p["observation"].sum()) % 2 for p in positions}
    assert seats == {0, 1}  # both first- and second-mover views were checked
    for opponent in (RandomPlayer(), MinimaxTicTacToe()):
        for obs in positions:
            assert_valid_probs(opponent.action_probs(obs), obs["action_mask"])


def test_connect_four_opponents_only_put_mass_on_legal_actions() -> None:
    positions = random_positions(connect_four_v3.env, n_games=60, seed=2)
    assert any(p["action_mask"].sum() < 7 for p in positions)  # full columns seen
    seats = {int(p["observation"].sum()) % 2 for p in positions}
    assert seats == {0, 1}
    for opponent in (RandomPlayer(), ConnectFourSearch()):
        for obs in positions:
            assert_valid_probs(opponent.action_probs(obs), obs["action_mask"])


def test_random_player_is_uniform_over_legal() -> None:
    for obs in random_positions(connect_four_v3.env, n_games=5, seed=3):
        probs = RandomPlayer().action_probs(obs)
        legal = obs["action_mask"] == 1
        assert np.allclose(probs[legal], 1.0 / legal.sum())


def test_opponents_refuse_an_observation_without_legal_moves() -> None:
    env = tictactoe_v3.env()
    env.reset()
    not_my_turn = env.observe("player_2")
    for opponent in (RandomPlayer(), MinimaxTicTacToe()):
        with pytest.raises(ValueError, match="no legal action"):
            opponent.action_probs(not_my_turn)


# --- choose_action ---------------------------------------------------------


def test_choose_action_greedy_breaks_ties_to_lowest_index() -> None:
    rng = np.random.default_rng(0)
    assert choose_action(np.array([0.0, 0.4, 0.2, 0.4]), rng, greedy=True) == 1


def test_choose_action_samples_only_the_support() -> None:
    rng = np.random.default_rng(0)
    probs = np.array([0.0, 0.5, 0.0, 0.5])
    drawn = {choose_action(probs, rng, greedy=False) for _ in range(200)}
    assert drawn == {1, 3}


def test_choose_action_with_a_mask_never_picks_a_forbidden_action() -> None:
    rng = np.random.default_rng(0)
    leaky = np.array([0.7, 0.1, 0.0, 0.2])
    mask = np.array([0, 1, 1, 1], dtype=np.int8)
    assert choose_action(leaky, rng, greedy=True, mask=mask) == 3
    assert {choose_action(leaky, rng, mask=mask) for _ in range(200)} == {1, 3}
    assert choose_action(np.zeros(4), greedy=True, mask=mask) == 1  # lowest legal
    with pytest.raises(ValueError, match="no legal action"):
        choose_action(leaky, rng, mask=np.zeros(4, dtype=np.int8))


# --- minimax ---------------------------------------------------------------


def test_minimax_support_is_exactly_the_optimal_moves() -> None:
    minimax = MinimaxTicTacToe()
    for obs in random_positions(tictactoe_v3.env, n_games=100, seed=4):
        board, mark = absolute_board(obs)
        nxt = "O" if mark == "X" else "X"
        value = solved_value(board, mark)
        optimal = {
            i
            for i, v in enumerate(board)
            if v == "." and -solved_value(board[:i] + mark + board[i + 1 :], nxt) == value
        }
        probs = minimax.action_probs(obs)
        assert support(probs) == optimal
        assert np.allclose(probs[list(optimal)], 1.0 / len(optimal))


@pytest.mark.parametrize("minimax_seat", ["player_1", "player_2"])
def test_minimax_never_loses_to_random(minimax_seat: str) -> None:
    env = tictactoe_v3.env()
    results = rewards_against_random(env, minimax_seat, MinimaxTicTacToe(), n_games=200, seed=5)
    assert results.count(-1) == 0
    assert results.count(1) > 100  # it also punishes random play


def test_minimax_against_itself_always_draws() -> None:
    env = tictactoe_v3.env()
    rng = np.random.default_rng(6)
    policies = {a: MinimaxTicTacToe() for a in env.possible_agents}
    results = [play_game(env, policies, rng)["player_1"] for _ in range(100)]
    assert results == [0] * 100


# --- connect four search ---------------------------------------------------


@pytest.mark.parametrize("search_seat", ["player_0", "player_1"])
def test_connect_four_search_beats_random(search_seat: str) -> None:
    env = connect_four_v3.env()
    results = rewards_against_random(env, search_seat, ConnectFourSearch(), n_games=100, seed=7)
    assert results.count(1) > 90


@pytest.mark.parametrize(
    "moves",
    [
        [0, 1, 0, 1, 0, 1],  # vertical win in col 0 (opponent also threatens col 1)
        [1, 1, 2, 2, 3, 6],  # open three on the bottom row: wins in col 0 or col 4
        [6, 0, 6, 1, 5, 2, 5],  # second player to move: horizontal win at col 3
    ],
)
def test_connect_four_search_takes_every_immediate_win(moves: list[int]) -> None:
    env = connect_four_after(moves)
    winning = {c for c in legal_cols(env) if mover_wins_with(moves, c)}
    assert winning
    probs = ConnectFourSearch().action_probs(env.observe(env.agent_selection))
    assert support(probs) == winning
    assert np.allclose(probs[list(winning)], 1.0 / len(winning))


def opponent_threats(moves: Sequence[int]) -> set[int]:
    """Columns where the opponent would win next if the mover played elsewhere."""
    legal = legal_cols(connect_four_after(moves))
    return {t for t in legal if mover_wins_with([*moves, next(c for c in legal if c != t)], t)}


@pytest.mark.parametrize(
    ("moves", "n_threats"),
    [
        ([0, 1, 0, 1, 0], 1),  # vertical threat in col 0
        ([0, 0, 1, 1, 2], 1),  # horizontal threat at col 3 on the bottom row
        ([1, 1, 2, 2, 3], 2),  # open three: threats at cols 0 and 4, block either
    ],
)
def test_connect_four_search_blocks_immediate_threats(moves: list[int], n_threats: int) -> None:
    env = connect_four_after(moves)
    assert not any(mover_wins_with(moves, c) for c in legal_cols(env))
    threats = opponent_threats(moves)
    assert len(threats) == n_threats
    probs = ConnectFourSearch().action_probs(env.observe(env.agent_selection))
    assert support(probs) == threats
    assert np.allclose(probs[list(threats)], 1.0 / len(threats))


def test_connect_four_search_avoids_handing_over_a_win() -> None:
    # Opponent (player_1) has three on row 4 with empty cells below both ends.
    moves = [1, 3, 2, 1, 5, 2, 6, 3]
    env = connect_four_after(moves)
    legal = legal_cols(env)
    assert not any(mover_wins_with(moves, c) for c in legal)
    safe = {
        c
        for c in legal
        if not any(
            mover_wins_with([*moves, c], d) for d in legal_cols(connect_four_after([*moves, c]))
        )
    }
    assert safe and safe != set(legal)
    probs = ConnectFourSearch().action_probs(env.observe(env.agent_selection))
    assert support(probs) == safe


def random_move_lists(n_positions: int, seed: int) -> list[list[int]]:
    """Columns of random legal play, each list ending in a live position."""
    rng = np.random.default_rng(seed)
    lists: list[list[int]] = []
    while len(lists) < n_positions:
        env, moves = connect_four_after([]), []
        for _ in range(int(rng.integers(4, 30))):
            col = random_legal(env.observe(env.agent_selection), rng)
            env.step(col)
            if any(env.terminations.values()):
                break
            moves.append(col)
        else:
            lists.append(moves)
    return lists


def search_oracle(moves: Sequence[int]) -> set[int]:
    """The search's rule played out in PettingZoo: win, else block, else safe, else any."""
    legal = legal_cols(connect_four_after(moves))
    wins = {c for c in legal if mover_wins_with(moves, c)}
    if wins:
        return wins
    threats = opponent_threats(moves)
    if threats:
        return threats
    safe = {
        c
        for c in legal
        if not any(
            mover_wins_with([*moves, c], d) for d in legal_cols(connect_four_after([*moves, c]))
        )
    }
    return safe or set(legal)


def test_connect_four_search_answers_a_batch_as_pettingzoo_play_says() -> None:
    """One batched call over many positions, each row checked against the rule
    played out move by move in PettingZoo (not against the search's own code)."""
    lists = random_move_lists(40, seed=11)
    observations = [env.observe(env.agent_selection) for env in map(connect_four_after, lists)]
    batch = {key: np.stack([obs[key] for obs in observations]) for key in observations[0]}
    probs = ConnectFourSearch().action_probs_batch(batch)
    assert probs.shape == (40, 7)
    tiers = Counter()
    for row, moves, obs in zip(probs, lists, observations, strict=True):
        expected = search_oracle(moves)
        assert support(row) == expected, moves
        assert np.allclose(row[list(expected)], 1.0 / len(expected))
        assert_valid_probs(row, obs["action_mask"])
        tiers[len(expected) < len(legal_cols(connect_four_after(moves)))] += 1
    assert tiers[True] and tiers[False]  # some positions narrowed the moves, some did not


# --- make_opponent ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "game", "cls"),
    [
        ("random", "tictactoe", RandomPlayer),
        ("minimax", "tictactoe", MinimaxTicTacToe),
        ("random", "connect_four", RandomPlayer),
        ("search", "connect_four", ConnectFourSearch),
    ],
)
def test_make_opponent_builds_the_named_player(name: str, game: str, cls: type) -> None:
    opponent = make_opponent(name, game)
    assert isinstance(opponent, cls)
    assert isinstance(opponent, Policy)


@pytest.mark.parametrize(
    ("name", "game", "mentioned"),
    [
        ("search", "tictactoe", ["'search'", "'minimax'", "'random'"]),
        ("minimax", "connect_four", ["'minimax'", "'random'", "'search'"]),
        ("alphazero", "tictactoe", ["'alphazero'", "'minimax'", "'random'"]),
        ("minimax", "kuhn_poker", ["'minimax'", "'kuhn_poker'", "'random'"]),
    ],
)
def test_make_opponent_rejects_bad_names_listing_valid_choices(
    name: str, game: str, mentioned: list[str]
) -> None:
    with pytest.raises(ValueError) as excinfo:
        make_opponent(name, game)
    message = str(excinfo.value)
    for text in mentioned:
        assert text in message


def test_choose_action_samples_from_float32_probabilities():
    """Network outputs in float32 may sum to 1 only within ~1e-7; sampling must work."""
    from envs.opponents import choose_action

    probs = np.full(7, 1 / 7, dtype=np.float32) * np.float32(1.0001)
    rng = np.random.default_rng(0)
    actions = {choose_action(probs, rng, greedy=False) for _ in range(200)}
    assert actions == set(range(7))


@pytest.mark.parametrize("game", sorted(REGISTRY_NAMES))
def test_every_registry_game_has_reference_opponents_that_play_it(game):
    """Training evaluates against these at every eval_interval: none may be missing."""
    from league.tools.evaluation import evaluate

    names = reference_opponents(game)
    assert names and names[0] == "random"
    for name in names:
        records = evaluate(game, make_opponent("random", game), make_opponent(name, game), 3)
        assert sum(r.games for r in records) == 3 * len(records)
