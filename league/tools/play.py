"""Play a game in the terminal against a snapshot or a reference opponent.

Win rates and Elo say how strong a player is; only playing it shows *how* it
plays (does it block, does it take a free win, does it open in the centre?).
``play`` is the engine behind ``league play``: it renders the board as text
after every move, reads moves from ``input_fn`` and writes everything through
``output_fn``, so the CLI passes ``input``/``print`` and tests pass scripted
lines and a list. Nothing here needs Ray or torch: the opponent is any object
with ``action_probs(obs)`` (``league.snapshot.load_policy``, ``envs.opponents``).

Moves are typed as PettingZoo action numbers, the numbers the league itself
uses: a tic-tac-toe cell is ``a`` = row * 3 + column (``envs.tictactoe_rules``),
a connect-four move is the column 0-6, rock-paper-scissors takes ``rock``,
``paper``, ``scissors`` (or a prefix) or 0/1/2. The board shows the number of
every empty cell and column, so nobody needs to remember the mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.opponents import Policy
from envs.registry import get_game

QUIT_WORDS = frozenset({"q", "quit", "exit"})
SYMBOLS = ("X", "O")
"""Marks of the first and second seat (the first seat moves first)."""

RPS_MOVES = ("rock", "paper", "scissors")


class _Quit(Exception):
    """The human asked to stop (``q``) or the input stream ended (EOF)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ---- board rendering -----------------------------------------------------------


def _first_seat_marks(env: Any) -> np.ndarray:
    """Board as an int array: 0 empty, 1 = first seat's mark, 2 = second seat's.

    PettingZoo observations are relative to the observer (plane 0 = its own
    pieces), so observing from the first seat gives a fixed X/O assignment.
    """
    planes = np.asarray(env.observe(env.possible_agents[0])["observation"])
    return planes[..., 0].astype(np.int64) + 2 * planes[..., 1].astype(np.int64)


def render_tictactoe(marks: np.ndarray) -> str:
    """3x3 grid with X/O, and the action number in each empty cell."""
    flat = np.asarray(marks).reshape(9)
    cells = [
        SYMBOLS[int(v) - 1] if v else str(a)  # empty cell: its action number
        for a, v in enumerate(flat)
    ]
    rows = [" " + " | ".join(cells[r * 3 : r * 3 + 3]) for r in range(3)]
    return "\n---+---+---\n".join(rows)


def render_connect_four(marks: np.ndarray) -> str:
    """6x7 grid (row 0 at the top, as pieces are seen falling) under column numbers."""
    grid = np.asarray(marks).reshape(6, 7)
    header = " " + " ".join(str(c) for c in range(7))
    lines = [header]
    for row in grid:
        lines.append(" " + " ".join(SYMBOLS[int(v) - 1] if v else "." for v in row))
    lines.append(header)
    return "\n".join(lines)


@dataclass(frozen=True)
class _BoardGameText:
    """What differs between the board games in the terminal."""

    noun: str
    """What a move names: "cell" or "column"."""
    illegal: str
    """Why a legal-looking number is refused: "is already taken" / "is full"."""
    render: Callable[[np.ndarray], str]


_BOARD_GAMES: dict[str, _BoardGameText] = {
    "tictactoe": _BoardGameText("cell", "is already taken", render_tictactoe),
    "connect_four": _BoardGameText("column", "is full", render_connect_four),
}


# ---- input -----------------------------------------------------------------------


def parse_board_move(text: str, mask: np.ndarray, noun: str, illegal: str) -> int | str:
    """The action typed in ``text``, or a message saying why it is refused.

    Refuses an empty line, a non-number, a number out of range and an illegal
    move (occupied cell, full column), each with its own message: a player who
    typed ``9`` on a 0-8 board needs to hear that, not "illegal move".
    """
    n = len(mask)
    legal = [int(a) for a in np.flatnonzero(mask)]
    choices = ", ".join(str(a) for a in legal)
    text = text.strip()
    if not text:
        return f"Please type a {noun} number (0-{n - 1}), or q to quit."
    try:
        action = int(text)
    except ValueError:
        return f"{text!r} is not a number: type a {noun} number (0-{n - 1}), or q to quit."
    if not 0 <= action < n:
        return f"{noun.capitalize()} {action} is out of range: type a number from 0 to {n - 1}."
    if not mask[action]:
        return f"{noun.capitalize()} {action} {illegal}: choose one of {choices}."
    return action


def parse_rps_move(text: str) -> int | str:
    """Rock/paper/scissors by name, unique prefix (``r``, ``pa``) or number 0-2."""
    text = text.strip().lower()
    hint = "type rock, paper or scissors (or 0, 1, 2), or q to quit."
    if not text:
        return f"Please {hint}"
    if text.lstrip("-").isdigit():
        action = int(text)
        if 0 <= action < len(RPS_MOVES):
            return action
        return f"Move {action} is out of range: {hint}"
    matches = [i for i, name in enumerate(RPS_MOVES) if name.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    return f"Unknown move {text!r}: {hint}"


def _ask(
    prompt: str,
    parse: Callable[[str], int | str],
    input_fn: Callable[[str], str],
    output_fn: Callable[[str], None],
) -> int:
    """Prompt until ``parse`` accepts a line; ``q`` or EOF raise ``_Quit``."""
    while True:
        try:
            line = input_fn(prompt)
        except EOFError:
            raise _Quit("Input closed: game abandoned.") from None
        if line.strip().lower() in QUIT_WORDS:
            raise _Quit("You quit: game abandoned.")
        result = parse(line)
        if isinstance(result, str):
            output_fn(result)
            continue
        return result


# ---- the computer ---------------------------------------------------------------


def greedy_action(policy: Policy, obs: Mapping[str, np.ndarray]) -> int:
    """The policy's most likely *legal* action (lowest index on ties).

    Illegal actions are masked here too: a policy that leaks probability onto
    an illegal move would otherwise end a PettingZoo game by forfeit (or trip
    connect-four's assertion) instead of showing how it plays.
    """
    probs = np.asarray(policy.action_probs(obs), dtype=np.float64).reshape(-1)
    mask = np.asarray(obs["action_mask"]).astype(bool).reshape(-1)
    if probs.shape != mask.shape:
        raise ValueError(
            f"policy returned {probs.shape[0]} action probabilities for {mask.shape[0]} actions"
        )
    if not mask.any():
        raise ValueError("no legal action in the observation's action_mask")
    return int(np.argmax(np.where(mask, probs, -np.inf)))


# ---- games -----------------------------------------------------------------------


def _result_line(totals: Mapping[str, float], human: str) -> str:
    mine = totals[human]
    best_other = max(v for a, v in totals.items() if a != human)
    verdict = "You win!" if mine > best_other else "You lose." if mine < best_other else "Draw."
    scores = ", ".join(
        f"{agent} ({'you' if agent == human else 'computer'}) {value:+g}"
        for agent, value in totals.items()
    )
    return f"{verdict}  Final rewards: {scores}"


def _play_turn_based(
    env: Any,
    text: _BoardGameText,
    policy: Policy,
    human: str,
    input_fn: Callable[[str], str],
    output_fn: Callable[[str], None],
    seed: int,
) -> dict[str, float]:
    agents = list(env.possible_agents)
    env.reset(seed=seed)
    totals = {agent: 0.0 for agent in agents}
    symbol = {agent: SYMBOLS[i] for i, agent in enumerate(agents)}
    order = "moves first" if human == agents[0] else "moves second"
    output_fn(f"You are {symbol[human]} ({human}, {order}). Type a {text.noun} number, q to quit.")
    output_fn(text.render(_first_seat_marks(env)))
    try:
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, _ = env.last()
            totals[agent] += float(reward)
            if terminated or truncated:
                env.step(None)
                continue
            mask = np.asarray(obs["action_mask"])
            if agent == human:
                action = _ask(
                    f"Your move ({symbol[agent]}), {text.noun}: ",
                    lambda line, m=mask: parse_board_move(line, m, text.noun, text.illegal),
                    input_fn,
                    output_fn,
                )
                output_fn(f"You ({symbol[agent]}) play {text.noun} {action}.")
            else:
                action = greedy_action(policy, obs)
                output_fn(f"Computer ({symbol[agent]}) plays {text.noun} {action}.")
            env.step(action)
            output_fn(text.render(_first_seat_marks(env)))
    except _Quit as stop:
        output_fn(stop.message)
        return totals
    finally:
        env.close()
    output_fn(_result_line(totals, human))
    return totals


def _play_rps(
    env: Any,
    policy: Policy,
    human: str,
    input_fn: Callable[[str], str],
    output_fn: Callable[[str], None],
    seed: int,
) -> dict[str, float]:
    agents = list(env.possible_agents)
    computer = next(a for a in agents if a != human)
    rounds = getattr(env.unwrapped, "max_cycles", None)
    obs, _ = env.reset(seed=seed)
    totals = {agent: 0.0 for agent in agents}
    of_rounds = f" of {rounds}" if rounds else ""
    output_fn(
        f"Rock-paper-scissors, {rounds or 'several'} rounds. You are {human}. "
        "Type rock, paper or scissors (or 0, 1, 2), q to quit."
    )
    played = 0
    try:
        while env.agents:
            # The computer decides from its own observation (your *previous*
            # move) before yours is known: simultaneous, so no peeking.
            theirs = greedy_action(policy, obs[computer])
            mine = _ask(
                f"Round {played + 1}{of_rounds}, your move: ", parse_rps_move, input_fn, output_fn
            )
            obs, rewards, _, _, _ = env.step({human: mine, computer: theirs})
            played += 1
            for agent, value in rewards.items():
                totals[agent] += float(value)
            gained = float(rewards.get(human, 0.0))
            outcome = "you win it" if gained > 0 else "computer wins it" if gained < 0 else "draw"
            output_fn(
                f"Round {played}{of_rounds}: you {RPS_MOVES[mine]}, computer "
                f"{RPS_MOVES[theirs]} -> {outcome}.\n"
                f"Score: you {totals[human]:+g}, computer {totals[computer]:+g}"
            )
    except _Quit as stop:
        output_fn(stop.message)
        return totals
    finally:
        env.close()
    output_fn(_result_line(totals, human))
    return totals


def play(
    policy: Policy,
    game: str,
    human_seat: str | None = None,
    input_fn: Callable[[str], str] = input,
    output_fn: Callable[[str], None] = print,
    seed: int = 0,
) -> dict[str, float]:
    """Play one game of ``game`` in the terminal; returns each seat's total reward.

    ``human_seat`` is a PettingZoo agent id (``player_1`` in tictactoe,
    ``player_0`` in connect_four and rps); None takes the first seat, so the
    human moves first. The computer plays ``policy`` greedily (its most likely
    legal action) so a game against a snapshot is reproducible. Bad input is
    refused with a message and asked again; ``q`` (or end of input) stops the
    game early and returns the rewards so far. ``seed`` goes to ``env.reset``.
    """
    spec = get_game(game)
    env = spec.make()
    agents = list(env.possible_agents)
    human = agents[0] if human_seat is None else human_seat
    if human not in agents:
        env.close()
        raise ValueError(f"unknown seat {human!r} for {game}; seats: {', '.join(agents)}")
    if spec.kind == "simultaneous":
        if game != "rps":
            env.close()
            raise ValueError(f"no terminal interface for simultaneous game {game!r}")
        return _play_rps(env, policy, human, input_fn, output_fn, seed)
    if game not in _BOARD_GAMES:
        env.close()
        raise ValueError(f"no terminal board for game {game!r}")
    return _play_turn_based(env, _BOARD_GAMES[game], policy, human, input_fn, output_fn, seed)
