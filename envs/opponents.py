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


def connect_four_candidates(board: c4.Board, legal: Sequence[int]) -> tuple[int, ...]:
    """Win now, else block, else avoid handing over a win, else anything legal."""
    wins = [c for c in c4.winning_columns(board, 1) if c in legal]
    if wins:
        return tuple(wins)
    blocks = [c for c in c4.winning_columns(board, -1) if c in legal]
    if blocks:
        return tuple(blocks)
    safe = [c for c in legal if not c4.winning_columns(c4.drop(board, c, 1), -1)]
    return tuple(safe) if safe else tuple(legal)


class ConnectFourSearch:
    """Two-ply tactical connect-four player: a cheap bar well above random."""

    def action_probs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        board = c4.decode_obs(obs)
        legal = legal_actions(obs)
        return uniform_over(connect_four_candidates(board, legal), c4.COLS)


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
