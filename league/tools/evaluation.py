"""Head-to-head games between policies through the real PettingZoo envs.

No Ray: policies are plain objects with `action_probs(obs)`, so evaluation runs in
the driver, in `league evaluate`, and in tests alike.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from envs.opponents import Policy, choose_action
from envs.registry import get_game
from league.core.outcomes import SeatRecord

# Reference opponents worth reporting for each game, weakest first.
REFERENCE_OPPONENTS: dict[str, tuple[str, ...]] = {
    "tictactoe": ("random", "minimax"),
    "connect_four": ("random", "search"),
    "rps": ("random",),
}


def play_game(
    game: str,
    seats: Mapping[str, Policy],
    rng: np.random.Generator,
    greedy: Mapping[str, bool],
) -> dict[str, float]:
    """Play one game; `seats` maps every agent id to its policy. Returns total rewards."""
    spec = get_game(game)
    env = spec.make()
    seed = int(rng.integers(2**31))
    totals = {agent: 0.0 for agent in env.possible_agents}
    if spec.kind == "turn_based":
        env.reset(seed=seed)
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, _ = env.last()
            totals[agent] += float(reward)
            action = None
            if not (terminated or truncated):
                probs = seats[agent].action_probs(obs)
                action = choose_action(probs, rng, greedy[agent])
            env.step(action)
    else:
        obs, _ = env.reset(seed=seed)
        while env.agents:
            actions = {
                a: choose_action(seats[a].action_probs(obs[a]), rng, greedy[a]) for a in env.agents
            }
            obs, rewards, _, _, _ = env.step(actions)
            for agent, reward in rewards.items():
                totals[agent] += float(reward)
    env.close()
    return totals


def evaluate(
    game: str,
    policy: Policy,
    opponent: Policy,
    games_per_seat: int,
    *,
    greedy: bool = True,
    opponent_greedy: bool = False,
    seed: int = 0,
) -> list[SeatRecord]:
    """`policy` plays `games_per_seat` games in each seat against `opponent`."""
    rng = np.random.default_rng(seed)
    agents = list(get_game(game).make().possible_agents)
    records = []
    for seat in agents:
        seats = {a: (policy if a == seat else opponent) for a in agents}
        greedy_by_seat = {a: (greedy if a == seat else opponent_greedy) for a in agents}
        counts = {"wins": 0, "draws": 0, "losses": 0}
        for _ in range(games_per_seat):
            totals = play_game(game, seats, rng, greedy_by_seat)
            mine = totals[seat]
            best_other = max(v for a, v in totals.items() if a != seat)
            outcome = "wins" if mine > best_other else "losses" if mine < best_other else "draws"
            counts[outcome] += 1
        records.append(SeatRecord(seat, **counts))
    return records
