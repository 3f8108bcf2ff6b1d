"""Fixed reference opponents, so league progress is measured against a stable bar.

Every opponent maps ONE PettingZoo observation dict (``observation`` planes +
``action_mask``, as the acting player sees it) to a float64 probability vector
over all actions: exactly 0 on illegal actions, summing to 1. Keeping them
stochastic (uniform over equally good moves) avoids evaluating against a single
deterministic line of play that a learner could memorise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from envs import connect_four_rules as c4
from envs import tictactoe_rules as ttt


@runtime_checkable
class Policy(Protocol):
    """Anything that turns one observation dict into action probabilities."""

    def action_probs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray: ...


@runtime_checkable
class BatchPolicy(Policy, Protocol):
    """A `Policy` that can also answer many positions in one call: the observation
    dict's arrays stacked on a leading axis, one probability row per position. Env
    runners use it for reference opponents in the league when a bot offers it."""

    def action_probs_batch(self, obs: Mapping[str, np.ndarray]) -> np.ndarray: ...


def choose_action(
    probs: np.ndarray,
    rng: np.random.Generator | None = None,
    greedy: bool = False,
    mask: np.ndarray | None = None,
) -> int:
    """Pick one action from a probability vector; every player here picks through this.

    Greedy takes the argmax (lowest index on ties); otherwise the action is
    sampled with ``rng`` (a fresh unseeded generator if None). The
    probabilities are renormalised first: float32 network outputs can miss a
    sum of 1 by more than numpy's ``choice`` accepts. With ``mask`` (an
    observation's ``action_mask``) actions it forbids are never chosen, even
    when a policy leaks probability onto them.
    """
    probs = np.asarray(probs, dtype=np.float64).reshape(-1)
    if mask is not None:
        legal = np.asarray(mask).astype(bool).reshape(-1)
        if probs.shape != legal.shape:
            raise ValueError(
                f"policy returned {probs.shape[0]} action probabilities "
                f"for {legal.shape[0]} actions"
            )
        if not legal.any():
            raise ValueError("no legal action in the observation's action_mask")
        probs = np.where(legal, probs, -np.inf if greedy else 0.0)
    if greedy:
        return int(np.argmax(probs))
    rng = rng if rng is not None else np.random.default_rng()
    return int(rng.choice(len(probs), p=probs / probs.sum()))


def legal_actions(obs: Mapping[str, np.ndarray]) -> tuple[int, ...]:
    """Legal actions from the mask; an empty mask means it is not our turn."""
    legal = tuple(int(a) for a in np.flatnonzero(np.asarray(obs["action_mask"])))
    if not legal:
        raise ValueError("action_mask has no legal action; is it this player's turn?")
    return legal


def uniform_over(actions: Sequence[int], n_actions: int) -> np.ndarray:
    """Probability vector spreading mass evenly over ``actions``."""
    probs = np.zeros(n_actions, dtype=np.float64)
    probs[list(actions)] = 1.0 / len(actions)
    return probs


class RandomPlayer:
    """Uniform over legal moves; the floor any learner must clear, in any game."""

    def action_probs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        return uniform_over(legal_actions(obs), len(obs["action_mask"]))


@functools.cache
def negamax_value(board: ttt.Board) -> int:
    """Game-theoretic value (+1 win, 0 draw, -1 loss) for the player to move."""
    if ttt.is_terminal(board):
        return ttt.winner(board)
    return max(-negamax_value(ttt.apply_move(board, a)) for a in ttt.legal_moves(board))


@functools.cache
def optimal_moves(board: ttt.Board) -> tuple[int, ...]:
    """Every move that keeps the mover's game-theoretic value."""
    best = negamax_value(board)
    return tuple(
        a for a in ttt.legal_moves(board) if -negamax_value(ttt.apply_move(board, a)) == best
    )


class MinimaxTicTacToe:
    """Perfect tic-tac-toe: uniform over all optimal moves, so it never loses."""

    def __init__(self) -> None:
        negamax_value(ttt.EMPTY_BOARD)  # solve the whole tree once per process

    def action_probs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        board = ttt.decode_obs(obs)
        legal = set(legal_actions(obs))
        moves = optimal_moves(board)
        if not moves or not legal.issuperset(moves):
            raise ValueError(f"action_mask {sorted(legal)} disagrees with board {board}")
        return uniform_over(moves, ttt.N_CELLS)


def connect_four_candidates(boards: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """(N, 6, 7) boards and (N, 7) legal columns -> (N, 7) bool candidate moves: win
    now, else block, else avoid handing over a win, else anything legal."""
    wins = c4.winning_columns(boards, 1) & legal
    blocks = c4.winning_columns(boards, -1) & legal
    after = c4.drop_every_column(boards, 1).reshape(-1, c4.ROWS, c4.COLS)
    hands_over = c4.winning_columns(after, -1).any(axis=1).reshape(len(boards), c4.COLS)
    safe = legal & ~hands_over
    candidates = legal.copy()
    for tier in (safe, blocks, wins):  # a later tier, where it has a move, wins out
        has_move = tier.any(axis=1)
        candidates[has_move] = tier[has_move]
    return candidates


class ConnectFourSearch:
    """Two-ply tactical connect-four player: a cheap bar well above random. Also
    answers a whole batch of positions at once (`action_probs_batch`)."""

    def action_probs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        batch = {key: np.asarray(value)[None] for key, value in obs.items()}
        return self.action_probs_batch(batch)[0]

    def action_probs_batch(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """Stacked observations (``observation`` (N, 6, 7, 2), ``action_mask`` (N, 7))
        -> (N, 7) probabilities, uniform over each position's candidate moves."""
        boards = c4.decode_obs(obs["observation"])
        legal = np.asarray(obs["action_mask"]).reshape(len(boards), c4.COLS).astype(bool)
        if not legal.any(axis=1).all():
            raise ValueError("action_mask has no legal action; is it this player's turn?")
        candidates = connect_four_candidates(boards, legal).astype(np.float64)
        return candidates / candidates.sum(axis=1, keepdims=True)


# Reference opponents beyond random play, weakest first (evaluation reports them in
# order). Every game, from the registry or not, has "random".
_OPPONENTS: dict[str, dict[str, Callable[[], Policy]]] = {
    "tictactoe": {"random": RandomPlayer, "minimax": MinimaxTicTacToe},
    "connect_four": {"random": RandomPlayer, "search": ConnectFourSearch},
}
_ANY_GAME: dict[str, Callable[[], Policy]] = {"random": RandomPlayer}


def reference_opponents(game: str) -> tuple[str, ...]:
    """Names of the game's reference opponents, weakest first."""
    return tuple(_OPPONENTS.get(game, _ANY_GAME))


def make_opponent(name: str, game: str) -> Policy:
    """Build a reference opponent: one of the game's by name, or a user's bot by
    import path (``package.module:callable``, called with no arguments, returning a
    `Policy`); refuse names that don't fit the game."""
    if ":" in name:
        from envs.registry import import_callable  # the registry's import rules

        bot = import_callable(name, what="reference opponent")()
        if not isinstance(bot, Policy):
            raise ValueError(
                f"reference opponent {name!r} returned {type(bot).__name__}, which has no "
                "action_probs(obs) method"
            )
        return bot
    choices = _OPPONENTS.get(game, _ANY_GAME)
    if name not in choices:
        valid = ", ".join(repr(n) for n in sorted(choices))
        raise ValueError(f"unknown opponent {name!r} for game {game!r}; valid opponents: {valid}")
    return choices[name]()
