"""Just enough connect-four rules for shallow search over PettingZoo observations.

A board is a flat tuple of 42 ints, index ``row * 7 + col`` with row 0 at the
top as in ``connect_four_v3``'s observation; +1 = the mover's piece, -1 = the
opponent's, 0 = empty. Unlike the tic-tac-toe helper the perspective never
flips: a shallow search only needs "can *this* piece win by dropping here".
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

Board = tuple[int, ...]

ROWS = 6
COLS = 7
_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def decode_obs(obs: Mapping[str, np.ndarray]) -> Board:
    """Board from the mover's view, read off PettingZoo's two planes."""
    planes = np.asarray(obs["observation"]).reshape(ROWS * COLS, 2)
    return tuple(int(v) for v in planes[:, 0] - planes[:, 1])


def legal_columns(board: Board) -> tuple[int, ...]:
    """Columns whose top cell is still empty."""
    return tuple(c for c in range(COLS) if board[c] == 0)


def landing_row(board: Board, col: int) -> int:
    """Row a piece dropped into ``col`` comes to rest in (pieces fall to row 5)."""
    for row in range(ROWS - 1, -1, -1):
        if board[row * COLS + col] == 0:
            return row
    raise ValueError(f"column {col} is full")


def drop(board: Board, col: int, piece: int) -> Board:
    """Board after ``piece`` (+1 or -1) is dropped into ``col``."""
    index = landing_row(board, col) * COLS + col
    return board[:index] + (piece,) + board[index + 1 :]


def _run_length(board: Board, row: int, col: int, dr: int, dc: int, piece: int) -> int:
    """How many ``piece`` cells follow (row, col) in direction (dr, dc)."""
    count = 0
    r, c = row + dr, col + dc
    while 0 <= r < ROWS and 0 <= c < COLS and board[r * COLS + c] == piece:
        count += 1
        r, c = r + dr, c + dc
    return count


def completes_four(board: Board, row: int, col: int, piece: int) -> bool:
    """Whether putting ``piece`` at the empty cell (row, col) makes four in a line."""
    for dr, dc in _DIRECTIONS:
        forward = _run_length(board, row, col, dr, dc, piece)
        backward = _run_length(board, row, col, -dr, -dc, piece)
        if forward + backward + 1 >= 4:
            return True
    return False


def winning_columns(board: Board, piece: int) -> tuple[int, ...]:
    """Columns where dropping ``piece`` wins immediately."""
    return tuple(
        c for c in legal_columns(board) if completes_four(board, landing_row(board, c), c, piece)
    )
