"""`league.play`: a human against a policy in the terminal, driven by scripted input.

The computer plays greedily, so against ``RandomPlayer`` it always takes the
lowest legal action and against ``MinimaxTicTacToe`` the lowest optimal one:
every game below is fully determined by the scripted lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from envs.opponents import MinimaxTicTacToe, RandomPlayer
from envs.registry import UnknownGameError
from league.tools.play import (
    parse_board_move,
    parse_rps_move,
    play,
    render_connect_four,
    render_tictactoe,
)

ROOT = Path(__file__).resolve().parent.parent


class Script:
    """``input``-compatible: returns the scripted lines, then raises EOFError
    as ``input`` does when stdin ends. Records every prompt shown."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = iter(lines)
        self.prompts: list[str] = []

    def __call__(self, prompt: str = "") -> str:
        self.prompts.append(prompt)
        try:
            return next(self.lines)
        except StopIteration:
            raise EOFError from None


def run(policy, game: str, lines: list[str], seat: str | None = None):
    out: list[str] = []
    script = Script(lines)
    result = play(policy, game, seat, input_fn=script, output_fn=out.append)
    return result, "\n".join(out), script


def assert_shown(text: str, *expected: str) -> None:
    missing = [line for line in expected if line not in text]
    assert not missing, f"not shown: {missing}\n--- output ---\n{text}"


def test_bad_input_is_reprompted_with_the_reason() -> None:
    # Minimax (greedy) answers the centre with the lowest optimal corner, 0.
    lines = ["", "abc", "9", "-1", "4.5", "4", "4", "0", "q"]
    result, text, script = run(MinimaxTicTacToe(), "tictactoe", lines)
    assert_shown(
        text,
        "Please type a cell number (0-8), or q to quit.",
        "'abc' is not a number: type a cell number (0-8), or q to quit.",
        "Cell 9 is out of range: type a number from 0 to 8.",
        "Cell -1 is out of range",
        "'4.5' is not a number",
        "Computer (O) plays cell 0.",
        "Cell 4 is already taken: choose one of 1, 2, 3, 5, 6, 7, 8.",
        "Cell 0 is already taken",
        "You quit: game abandoned.",
    )
    assert result == {"player_1": 0.0, "player_2": 0.0}
    # Every bad line was answered by asking again, for the same player.
    assert len(script.prompts) == len(lines)
    assert all(p == "Your move (X), cell: " for p in script.prompts)


def test_full_tictactoe_game_against_minimax_is_lost_without_blocking() -> None:
    # X4 O0 X8 O2 (threatens 1) X6 (no block) O1: three O's in the top row.
    result, text, _ = run(MinimaxTicTacToe(), "tictactoe", ["4", "8", "6"])
    assert result == {"player_1": -1.0, "player_2": 1.0}
    assert "You lose." in text
    final_board = " O | O | O\n---+---+---\n 3 | X | 5\n---+---+---\n X | 7 | X"
    assert text.rstrip().splitlines()[-6:-1] == final_board.splitlines()


def test_full_tictactoe_game_against_minimax_can_be_drawn() -> None:
    # Blocking every threat against perfect play ends in a draw.
    result, text, _ = run(MinimaxTicTacToe(), "tictactoe", ["4", "8", "1", "3", "6"])
    assert result == {"player_1": 0.0, "player_2": 0.0}
    assert "Draw." in text


def test_win_against_random_and_the_board_shows_every_move() -> None:
    # Random (greedy) takes the lowest empty cell: X4 O0 X8 O1 X2 O3 X6 wins.
    result, text, _ = run(RandomPlayer(), "tictactoe", ["4", "8", "2", "6"])
    assert result == {"player_1": 1.0, "player_2": -1.0}
    assert_shown(
        text,
        "You win!",
        "Final rewards: player_1 (you) +1, player_2 (computer) -1",
        "You are X (player_1, moves first).",
    )
    # First board: empty cells show their numbers.
    assert " 0 | 1 | 2\n---+---+---\n 3 | 4 | 5\n---+---+---\n 6 | 7 | 8" in text
    # After X4 and O0.
    assert " O | 1 | 2\n---+---+---\n 3 | X | 5\n---+---+---\n 6 | 7 | 8" in text
    assert " O | O | X\n---+---+---\n O | X | 5\n---+---+---\n X | 7 | X" in text
    for move in ("You (X) play cell 4.", "Computer (O) plays cell 3.", "You (X) play cell 6."):
        assert move in text


def test_human_can_take_the_second_seat() -> None:
    # Random opens in cell 0; the human (O) then plays the centre.
    result, text, script = run(RandomPlayer(), "tictactoe", ["q"], seat="player_2")
    assert "You are O (player_2, moves second)." in text
    assert "Computer (X) plays cell 0." in text
    assert script.prompts == ["Your move (O), cell: "]
    assert result == {"player_1": 0.0, "player_2": 0.0}


def test_connect_four_full_column_out_of_range_and_a_win() -> None:
    # Random drops into column 0 every time: after three human moves in 0 the
    # column is full. Then the human stacks column 3 while random fills column 1.
    lines = ["0", "0", "0", "0", "7", "3", "3", "3", "3"]
    result, text, _ = run(RandomPlayer(), "connect_four", lines)
    assert_shown(
        text,
        "Column 0 is full: choose one of 1, 2, 3, 4, 5, 6.",
        "Column 7 is out of range: type a number from 0 to 6.",
        "Computer (O) plays column 1.",
    )
    assert result == {"player_0": 1.0, "player_1": -1.0}
    assert "You win!" in text
    final = text.split("You (X) play column 3.")[-1].split("You win!")[0].strip("\n")
    assert final.splitlines() == [
        " 0 1 2 3 4 5 6",
        " O . . . . . .",
        " X . . . . . .",
        " O . . X . . .",
        " X O . X . . .",
        " O O . X . . .",
        " X O . X . . .",
        " 0 1 2 3 4 5 6",
    ]


def test_eof_ends_the_game_cleanly() -> None:
    result, text, _ = run(RandomPlayer(), "connect_four", ["3"])
    assert "Input closed: game abandoned." in text
    assert result == {"player_0": 0.0, "player_1": 0.0}


@pytest.mark.parametrize("word", ["q", "Q", " quit ", "exit"])
def test_quit_words(word: str) -> None:
    _, text, _ = run(RandomPlayer(), "tictactoe", [word])
    assert "You quit" in text


def test_rock_paper_scissors() -> None:
    # Random (greedy) always plays rock; paper wins every round.
    lines = ["", "lizard", "5", "s", *(["paper"] * 7), "1", "p", "0", *(["PAPER"] * 4)]
    result, text, script = run(RandomPlayer(), "rps", lines)
    assert_shown(
        text,
        "Please type rock, paper or scissors (or 0, 1, 2), or q to quit.",
        "Unknown move 'lizard'",
        "Move 5 is out of range",
        "Round 1 of 15: you scissors, computer rock -> computer wins it.",
        "Round 2 of 15: you paper, computer rock -> you win it.",
        "Round 11 of 15: you rock, computer rock -> draw.",
        "Score: you +12, computer -12",
    )
    assert result == {"player_0": 12.0, "player_1": -12.0}
    assert "You win!" in text
    assert script.prompts[0] == "Round 1 of 15, your move: "


def test_rps_quit_keeps_the_score_so_far() -> None:
    result, text, _ = run(RandomPlayer(), "rps", ["paper", "paper", "q"], seat="player_1")
    assert result == {"player_0": -2.0, "player_1": 2.0}
    assert "You quit" in text


def test_bad_seat_and_game() -> None:
    with pytest.raises(ValueError, match="unknown seat 'player_9'.*player_1, player_2"):
        play(RandomPlayer(), "tictactoe", "player_9", input_fn=Script([]), output_fn=print)
    with pytest.raises(UnknownGameError):
        play(RandomPlayer(), "chess", None, input_fn=Script([]), output_fn=print)


class LeakyPolicy:
    """Puts most mass on an illegal action: the computer must still play legally."""

    def action_probs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        probs = np.full(len(obs["action_mask"]), 0.01)
        probs[0] = 0.9
        return probs / probs.sum()


def test_the_computer_never_plays_illegal_moves() -> None:
    # Leaky puts 0.9 on cell 0; once X holds it, the computer takes the next best, 1.
    _, text, _ = run(LeakyPolicy(), "tictactoe", ["0", "q"])
    assert "Computer (O) plays cell 1." in text
    wrong_size = type("WrongSize", (), {"action_probs": lambda self, o: np.full(4, 0.25)})()
    with pytest.raises(ValueError, match="4 action probabilities for 9 actions"):
        run(wrong_size, "tictactoe", ["0"])


def test_parsers_and_renderers() -> None:
    mask = np.ones(7, dtype=np.int8)
    assert parse_board_move(" 6 ", mask, "column", "is full") == 6
    assert parse_rps_move("Sc") == 2 and parse_rps_move("0") == 0
    assert "Unknown move" in str(parse_rps_move("r p"))
    marks = np.zeros(9, dtype=np.int64)
    marks[[0, 4]] = [1, 2]
    assert render_tictactoe(marks).splitlines()[0] == " X | 1 | 2"
    grid = np.zeros((6, 7), dtype=np.int64)
    grid[5, 3] = 1
    assert render_connect_four(grid).splitlines()[-2] == " . . . X . . ."


def run_piped(stdin: str) -> subprocess.CompletedProcess[str]:
    """``play`` with the default input/print, in a real process reading a pipe."""
    code = (
        "import sys\n"
        "from envs.opponents import RandomPlayer\n"
        "from league.tools.play import play\n"
        "result = play(RandomPlayer(), 'tictactoe', None)\n"
        "print('RESULT', result['player_1'], result['player_2'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SDL_VIDEODRIVER": "dummy"}
    return subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


def test_real_process_with_piped_stdin() -> None:
    """The default input/print on real pipes: what `league play` does in a shell."""
    done = run_piped("oops\n4\n8\n2\n6\n")
    assert done.returncode == 0, done.stderr
    assert "'oops' is not a number" in done.stdout
    assert "Your move (X), cell: " in done.stdout  # input()'s prompt reached stdout
    assert " O | O | X\n---+---+---\n O | X | 5\n---+---+---\n X | 7 | X" in done.stdout
    assert "You win!" in done.stdout
    assert done.stdout.rstrip().endswith("RESULT 1.0 -1.0")

    # Stdin closing mid-game (Ctrl-D, or a pipe that ends) is not a traceback.
    early = run_piped("4\n")
    assert early.returncode == 0, early.stderr
    assert "Input closed: game abandoned." in early.stdout
    assert "Traceback" not in early.stderr


def test_plays_a_snapshot_loaded_with_load_policy(tmp_path: Path) -> None:
    """What `league play --snapshot PATH` plays: a real safetensors snapshot."""
    torch = pytest.importorskip("torch")
    from envs.registry import get_game
    from league.snapshot import load_policy, player_metadata, save_snapshot
    from rlmodules.networks import build_mlp

    config = {"hidden_sizes": [16], "activation": "relu"}
    torch.manual_seed(0)
    net = build_mlp(6 * 7 * 2, config["hidden_sizes"], 7, config["activation"])
    weights = {f"policy_net.{k}": v.detach().numpy() for k, v in net.state_dict().items()}
    meta = player_metadata("connect_four", config, "main_0", 0)
    save_snapshot(tmp_path / "main_0", weights, meta)
    policy = load_policy(tmp_path / "main_0", "connect_four")

    env = get_game("connect_four").make()
    env.reset(seed=0)
    env.step(3)
    expected = int(np.argmax(policy.action_probs(env.observe("player_1"))))
    result, text, _ = run(policy, "connect_four", ["3", "q"])
    assert f"Computer (O) plays column {expected}." in text
    assert result == {"player_0": 0.0, "player_1": 0.0}


def test_a_team_game_names_the_partner_and_ranks_the_team() -> None:
    """tiny_bridge_4p's partnerships (its own teams): the computer plays the human's
    partner too, said at the start and in the final line; `teams` (a run's --teams)
    pairs the seats otherwise."""
    _, text, _ = run(RandomPlayer(), "tiny_bridge_4p", ["0"] * 10, seat="player_1")
    assert "you and player_3 (computer)." in text
    assert "player_3 (computer, your partner)" in text and "player_0 (computer) " in text
    out: list[str] = []
    teams = {"a": ["player_0", "player_1"], "b": ["player_2", "player_3"]}
    totals = play(
        RandomPlayer(),
        "tiny_bridge_4p",
        "player_1",
        input_fn=Script(["0"] * 10),
        output_fn=out.append,
        teams=teams,
    )
    final = out[-1]
    assert "player_0 (computer, your partner)" in final
    mine, theirs = totals["player_0"] + totals["player_1"], totals["player_2"] + totals["player_3"]
    verdict = "You win!" if mine > theirs else "You lose." if mine < theirs else "Draw."
    assert final.startswith(verdict)
