"""Play a game in the terminal against a snapshot or a reference opponent.

Win rates and Elo say how strong a player is; only playing it shows *how* it
plays (does it block, does it take a free win, does it open in the centre?).
``play`` is the engine behind ``league play``: it renders the board as text
after every move, reads moves from ``input_fn`` and writes everything through
``output_fn``, so the CLI passes ``input``/``print`` and tests pass scripted
lines and a list. Nothing here needs Ray or torch: the opponent is any object
with ``action_probs(obs)`` (``league.snapshot.load_policy``, ``envs.opponents``).
The game loop is ``league.tools.evaluation.Episode``, the one evaluation runs:
the human is just another seat, whose moves are read from ``input_fn``.

Moves are typed as PettingZoo action numbers, the numbers the league itself
uses: a tic-tac-toe cell is ``a`` = row * 3 + column (``envs.tictactoe_rules``),
a connect-four move is the column 0-6, rock-paper-scissors takes ``rock``,
``paper``, ``scissors`` (or a prefix) or 0/1/2. The board shows the number of
every empty cell and column, so nobody needs to remember the mapping.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.opponents import Policy
from envs.registry import game_layout, get_game
from league.core.match import outcomes_from_ranks, team_ranks
from league.tools.evaluation import Chooser, Episode, Step, policy_chooser, start_game

QUIT_WORDS = frozenset({"q", "quit", "exit"})
SYMBOLS = ("X", "O")
"""Marks of the first and second seat (the first seat moves first)."""

RPS_MOVES = ("rock", "paper", "scissors")

Output = Callable[[str], None]


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


# ---- games -----------------------------------------------------------------------


_VERDICTS = {"win": "You win!", "loss": "You lose.", "draw": "Draw."}


def _result_line(
    totals: Mapping[str, float], human: str, teams: Mapping[str, str] | None = None
) -> str:
    """The human's verdict (by their team's rank: a partner's chips count too) and
    every seat's reward."""
    teams = dict(teams or {seat: seat for seat in totals})
    verdict = _VERDICTS[outcomes_from_ranks(team_ranks(totals, teams), teams)[human]]

    def who(agent: str) -> str:
        if agent == human:
            return "you"
        return "computer, your partner" if teams[agent] == teams[human] else "computer"

    scores = ", ".join(f"{agent} ({who(agent)}) {value:+g}" for agent, value in totals.items())
    return f"{verdict}  Final rewards: {scores}"


Ask = Callable[[str, Callable[[str], int | str]], int]
"""``_ask`` bound to the terminal: (prompt, parser) -> the accepted move."""


@dataclass(frozen=True)
class _Interface:
    """How one game talks to the human: opening text, their moves, every step shown."""

    intro: Callable[[], None]
    ask_human: Chooser
    show: Callable[[Step, Mapping[str, float]], None]
    """Called after every env step with each seat's total reward so far."""


def _board_interface(
    env: Any, text: _BoardGameText, human: str, ask: Ask, out: Output
) -> _Interface:
    agents = list(env.possible_agents)
    symbol = {agent: SYMBOLS[i] for i, agent in enumerate(agents)}

    def intro() -> None:
        order = "moves first" if human == agents[0] else "moves second"
        out(f"You are {symbol[human]} ({human}, {order}). Type a {text.noun} number, q to quit.")
        out(text.render(_first_seat_marks(env)))

    def ask_human(obs: Mapping[str, np.ndarray]) -> int:
        mask = np.asarray(obs["action_mask"])
        return ask(
            f"Your move ({symbol[human]}), {text.noun}: ",
            lambda line: parse_board_move(line, mask, text.noun, text.illegal),
        )

    def show(step: Step, totals: Mapping[str, float]) -> None:
        ((agent, action),) = step.actions.items()
        if agent == human:
            out(f"You ({symbol[agent]}) play {text.noun} {action}.")
        else:
            out(f"Computer ({symbol[agent]}) plays {text.noun} {action}.")
        out(text.render(_first_seat_marks(env)))

    return _Interface(intro, ask_human, show)


def _rps_interface(env: Any, human: str, ask: Ask, out: Output) -> _Interface:
    other = next(a for a in env.possible_agents if a != human)
    rounds = getattr(env.unwrapped, "max_cycles", None)
    of_rounds = f" of {rounds}" if rounds else ""
    played = 0

    def intro() -> None:
        out(
            f"Rock-paper-scissors, {rounds or 'several'} rounds. You are {human}. "
            "Type rock, paper or scissors (or 0, 1, 2), q to quit."
        )

    def ask_human(obs: Mapping[str, np.ndarray]) -> int:
        return ask(f"Round {played + 1}{of_rounds}, your move: ", parse_rps_move)

    def show(step: Step, totals: Mapping[str, float]) -> None:
        nonlocal played
        played += 1
        mine, theirs = step.actions[human], step.actions[other]
        gained = step.rewards.get(human, 0.0)
        outcome = "you win it" if gained > 0 else "computer wins it" if gained < 0 else "draw"
        out(
            f"Round {played}{of_rounds}: you {RPS_MOVES[mine]}, computer "
            f"{RPS_MOVES[theirs]} -> {outcome}.\n"
            f"Score: you {totals[human]:+g}, computer {totals[other]:+g}"
        )

    return _Interface(intro, ask_human, show)


def _openspiel_state(env: Any) -> Any:
    return getattr(env.unwrapped, "game_state", None)


def _generic_interface(env: Any, game: str, human: str, ask: Ask, out: Output) -> _Interface:
    """Any turn-based game: legal action numbers (OpenSpiel names them), and for
    OpenSpiel games what the human may know (their information state, no hidden cards)."""
    agents = list(env.possible_agents)
    player = agents.index(human)

    def name(action: int, agent: str) -> str:
        state = _openspiel_state(env)
        if state is None or state.is_terminal():
            return str(action)
        return f"{action} ({state.action_to_string(agents.index(agent), action)})"

    def known() -> None:
        state = _openspiel_state(env)
        if state is not None and not state.is_terminal():
            if state.get_game().get_type().provides_information_state_string:
                out(f"You see: {state.information_state_string(player)}")

    def intro() -> None:
        out(f"{game}: you are {human}. Type one of the listed action numbers, q to quit.")
        known()

    def ask_human(obs: Mapping[str, np.ndarray]) -> int:
        mask = np.asarray(obs["action_mask"])
        legal = ", ".join(name(int(a), human) for a in np.flatnonzero(mask))
        return ask(
            f"Your move [{legal}]: ",
            lambda line: parse_board_move(line, mask, "action", "is not legal now"),
        )

    def show(step: Step, totals: Mapping[str, float]) -> None:
        ((agent, action),) = step.actions.items()
        who = "You play" if agent == human else f"Computer ({agent}) plays"
        out(f"{who} {action}.")
        known()

    return _Interface(intro, ask_human, show)


def play(
    policy: Policy,
    game: str,
    human_seat: str | None = None,
    input_fn: Callable[[str], str] = input,
    output_fn: Output = print,
    seed: int = 0,
    teams: Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """Play one game of ``game`` in the terminal; returns each seat's total reward.

    ``human_seat`` is a PettingZoo agent id (``player_1`` in tictactoe,
    ``player_0`` in connect_four and rps); None takes the first seat, so the
    human moves first. The computer plays ``policy`` greedily (its most likely
    legal action) so a game against a snapshot is reproducible. Bad input is
    refused with a message and asked again; ``q`` (or end of input) stops the
    game early and returns the rewards so far. ``seed`` goes to ``env.reset``.
    ``teams`` (team -> seats, as ``--teams``) ranks the teams a run was trained
    with; None: the game's own.
    """
    spec = get_game(game)
    env = spec.make()
    agents = list(env.possible_agents)
    human = agents[0] if human_seat is None else human_seat
    ask = functools.partial(_ask, input_fn=input_fn, output_fn=output_fn)
    layout = game_layout(game, teams)
    team_of = {seat: layout.team_of(seat).name for seat in layout.seats}
    try:
        if human not in agents:
            raise ValueError(f"unknown seat {human!r} for {game}; seats: {', '.join(agents)}")
        if spec.kind == "simultaneous":
            if game != "rps":
                raise ValueError(f"no terminal interface for simultaneous game {game!r}")
            ui = _rps_interface(env, human, ask, output_fn)
        elif game in _BOARD_GAMES:
            ui = _board_interface(env, _BOARD_GAMES[game], human, ask, output_fn)
        else:
            ui = _generic_interface(env, game, human, ask, output_fn)
        # The human is just another seat, whose moves are read from the terminal.
        start_game([policy], np.random.default_rng(seed))
        computer = policy_chooser(policy, greedy=True, legal_only=True)
        choosers = {agent: ui.ask_human if agent == human else computer for agent in agents}
        episode = Episode(env, choosers, seed, turn_based=spec.kind == "turn_based")
        ui.intro()
        partners = [a for a in agents if a != human and team_of[a] == team_of[human]]
        if partners:  # a team game: the computer plays the human's partners too
            output_fn(f"Your team {team_of[human]}: you and {', '.join(partners)} (computer).")
        for step in episode.steps():
            ui.show(step, episode.totals)
    except _Quit as stop:
        output_fn(stop.message)
        return episode.totals
    finally:
        env.close()
    output_fn(_result_line(episode.totals, human, team_of))
    return episode.totals
