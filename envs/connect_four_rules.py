"""Just enough connect-four rules for a shallow search over PettingZoo observations,
vectorized over a batch of positions.

Boards are int8 arrays of shape (N, 6, 7), row 0 at the top as in
``connect_four_v3``'s observation; +1 = the mover's piece, -1 = the opponent's,
0 = empty. The perspective never flips: a shallow search only needs "can *this*
piece win by dropping here". Everything is numpy over the whole batch, so an env
runner asking for many positions at once (the league's reference opponent) pays
one call, not one Python search per position.
"""

from __future__ import annotations

import numpy as np

ROWS = 6
COLS = 7


def decode_obs(observations: np.ndarray) -> np.ndarray:
    """Boards from the mover's view, read off PettingZoo's two planes: (N, 6, 7, 2) -> (N, 6, 7)."""
    planes = np.asarray(observations).reshape(-1, ROWS, COLS, 2).astype(np.int8)
    return planes[..., 0] - planes[..., 1]


def has_four(boards: np.ndarray, piece: int) -> np.ndarray:
    """(N, 6, 7) boards -> (N,) bool: ``piece`` has four in a line somewhere."""
    m = boards == piece
    horizontal = m[:, :, :-3] & m[:, :, 1:-2] & m[:, :, 2:-1] & m[:, :, 3:]
    vertical = m[:, :-3] & m[:, 1:-2] & m[:, 2:-1] & m[:, 3:]
    down_right = m[:, :-3, :-3] & m[:, 1:-2, 1:-2] & m[:, 2:-1, 2:-1] & m[:, 3:, 3:]
    down_left = m[:, :-3, 3:] & m[:, 1:-2, 2:-1] & m[:, 2:-1, 1:-2] & m[:, 3:, :-3]
    return (
        horizontal.any(axis=(1, 2))
        | vertical.any(axis=(1, 2))
        | down_right.any(axis=(1, 2))
        | down_left.any(axis=(1, 2))
    )


def legal_columns(boards: np.ndarray) -> np.ndarray:
    """(N, 6, 7) -> (N, 7) bool: the column's top cell is empty."""
    return boards[:, 0, :] == 0


def drop_every_column(boards: np.ndarray, piece: int) -> np.ndarray:
    """(N, 6, 7) -> (N, 7, 6, 7): each board after ``piece`` is dropped into each
    column (a full column's board is left unchanged; mask it with `legal_columns`)."""
    n = len(boards)
    after = np.repeat(boards[:, None], COLS, axis=1)
    empty = (boards == 0).sum(axis=1)  # (N, 7): pieces fall to the lowest empty row
    rows, cols = np.nonzero(empty > 0)
    after[rows, cols, empty[rows, cols] - 1, cols] = piece
    return after.reshape(n, COLS, ROWS, COLS)


def winning_columns(boards: np.ndarray, piece: int) -> np.ndarray:
    """(N, 6, 7) -> (N, 7) bool: dropping ``piece`` there makes four (in a live
    game the board has no four yet, so any four after the drop is the new one)."""
    after = drop_every_column(boards, piece).reshape(-1, ROWS, COLS)
    return has_four(after, piece).reshape(len(boards), COLS) & legal_columns(boards)
