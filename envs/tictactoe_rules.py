"""Pure-Python tic-tac-toe rules, so search can run without stepping PettingZoo.

A board is a tuple of 9 ints seen from the player about to move: 1 = the
mover's mark, -1 = the opponent's mark, 0 = empty. Index ``a`` is PettingZoo's
action ``a`` and observation cell ``(a // 3, a % 3)`` (row-major; checked
against ``tictactoe_v3`` in the tests). Because the board is always relative
to the mover, ``apply_move`` flips the sign after placing the mark, which is
what makes negamax-style recursion and memoisation natural.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

Board = tuple[int, ...]

N_CELLS = 9
EMPTY_BOARD: Board = (0,) * N_CELLS
LINES: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),
    (0, 4, 8),
    (2, 4, 6),
)


def winner(board: Board) -> int:
    """+1 if the mover has three in a row, -1 if the opponent has, else 0."""
    for a, b, c in LINES:
        line_sum = board[a] + board[b] + board[c]
        if line_sum == 3:
            return 1
        if line_sum == -3:
            return -1
    return 0


def is_terminal(board: Board) -> bool:
    """The game is over when someone has a line or the board is full."""
    return winner(board) != 0 or 0 not in board


def legal_moves(board: Board) -> tuple[int, ...]:
    """Empty cells, or nothing once the game is over (no move may follow a win)."""
    if is_terminal(board):
        return ()
    return tuple(i for i, v in enumerate(board) if v == 0)


def apply_move(board: Board, action: int) -> Board:
    """Place the mover's mark and return the board from the *next* mover's view."""
    if not 0 <= action < N_CELLS or board[action] != 0:
        raise ValueError(f"illegal tic-tac-toe move {action} on board {board}")
    return tuple(-1 if i == action else -v for i, v in enumerate(board))


def encode_obs(board: Board) -> dict[str, np.ndarray]:
    """The PettingZoo observation dict the mover sees for ``board``.

    Planes match ``tictactoe_v3`` exactly. The mask is all zeros on a finished
    board (PettingZoo leaves stale empty cells there, but no action follows).
    """
    cells = np.asarray(board, dtype=np.int8).reshape(3, 3)
    observation = np.stack([cells == 1, cells == -1], axis=-1).astype(np.int8)
    mask = np.zeros(N_CELLS, dtype=np.int8)
    mask[list(legal_moves(board))] = 1
    return {"observation": observation, "action_mask": mask}


def decode_obs(obs: Mapping[str, np.ndarray]) -> Board:
    """Inverse of ``encode_obs`` for the planes (the mask is implied by them)."""
    planes = np.asarray(obs["observation"]).reshape(N_CELLS, 2)
    if np.any(planes[:, 0] & planes[:, 1]):
        raise ValueError("observation has a cell marked by both players")
    return tuple(int(v) for v in planes[:, 0] - planes[:, 1])
