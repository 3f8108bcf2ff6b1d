"""Connect-four tactics: does a policy take the win in front of it, and block the
opponent's?

Two sampling connect-four policies trained for minutes are decided by blunders more
than by plans: a move that wins now, or the one move that stops the opponent
winning next, is often left unplayed. This measures it directly, over the positions
of a policy's own games (it plays itself, both seats sampling, as in training):

- `win`: where the mover can win at once, the probability it gives the winning
  move(s);
- `block`: where it cannot win but the opponent threatens to, the probability it
  gives the blocking move(s).

1.0 is a tactically perfect player (the `search` reference opponent); uniform play
scores about 1/7 on each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

import envs.connect_four_rules as c4
from envs.opponents import Policy, choose_action
from envs.registry import get_game
from league.tools.evaluation import Episode, start_game


@dataclass(frozen=True)
class Tactics:
    win: float
    """Mean probability on a winning move, where the mover has one."""
    block: float
    """Mean probability on a blocking move, where the mover has no win and must block."""
    win_positions: int
    block_positions: int


def connect_four_tactics(policy: Policy, games: int = 200, seed: int = 0) -> Tactics:
    """`policy` plays `games` games against itself, sampling; its probability mass on
    winning and blocking moves wherever one of them is due."""
    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    rng = np.random.default_rng(seed)
    wins: list[float] = []
    blocks: list[float] = []

    def choose(obs: Mapping[str, np.ndarray]) -> int:
        probs = np.asarray(policy.action_probs(obs), dtype=np.float64).reshape(-1)
        probs = probs / probs.sum()
        board = c4.decode_obs(obs["observation"])
        legal = np.asarray(obs["action_mask"]).astype(bool).reshape(1, c4.COLS)
        winning = (c4.winning_columns(board, 1) & legal)[0]
        blocking = (c4.winning_columns(board, -1) & legal)[0]
        if winning.any():
            wins.append(float(probs[winning].sum()))
        elif blocking.any():
            blocks.append(float(probs[blocking].sum()))
        return choose_action(probs, rng, greedy=False, mask=obs["action_mask"])

    spec = get_game("connect_four")
    for _ in range(games):
        env = spec.make()
        start_game([policy], rng)
        try:
            choosers = {agent: choose for agent in env.possible_agents}
            Episode(env, choosers, int(rng.integers(2**31)), turn_based=True).play()
        finally:
            env.close()
    return Tactics(
        win=float(np.mean(wins)) if wins else float("nan"),
        block=float(np.mean(blocks)) if blocks else float("nan"),
        win_positions=len(wins),
        block_positions=len(blocks),
    )
