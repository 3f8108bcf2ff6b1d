"""`league probe`: a fresh best response trained against a frozen snapshot."""

from __future__ import annotations

import pytest

from envs.registry import game_spaces
from league.snapshot import player_metadata, save_snapshot
from rlmodules.masked_policy import masked_policy_spec


def _untrained_snapshot(path, hidden=(16,)):
    obs, act = game_spaces("tictactoe")
    model_config = {"hidden_sizes": list(hidden), "activation": "relu"}
    module = masked_policy_spec(obs, act, model_config, inference_only=True).build()
    meta = player_metadata("tictactoe", model_config, "main_0", env_steps=0)
    save_snapshot(path, module.get_state(), meta)
    return path


def test_probe_trains_a_best_response_and_reports_intervals(ray_session, tmp_path):
    from league.snapshot import load_policy
    from league.training.probe import probe

    # Loaded once, as `league probe` does after refusing a bad snapshot early.
    target = load_policy(_untrained_snapshot(tmp_path / "target"))
    lines: list[str] = []
    result = probe(target, minutes=0.5, games=200, seed=1, log=lines.append)
    assert "best response to main_0 for 0.5 min" in lines[0], lines
    progress = [line for line in lines if "env steps" in line]
    # A line every 15 s and one at the end, not one per iteration (there are dozens).
    assert result.env_steps > 0 and 1 <= len(progress) <= 3, lines
    assert progress[-1].endswith("0.0 min left"), progress
    assert result.games == 200 and len(result.seats) == 2
    lo, hi = result.win_interval()
    assert 0.0 <= lo <= result.win_rate <= hi <= 1.0
    # Random play against an untrained (near-uniform) tictactoe player wins about
    # 44% over both seats; half a minute of PPO already does clearly better.
    assert result.win_rate > 0.5 and result.mean_score > 0.1, result.format()
    assert "win rate" in result.format() and "seat player_1" in result.format()


def test_a_loaded_target_is_named_as_the_league_names_snapshots(tmp_path):
    import dataclasses

    from league.snapshot import load_policy
    from league.training.probe import describe

    target = load_policy(_untrained_snapshot(tmp_path / "target"))
    assert describe(target) == "main_0"  # a player's latest weights carry no version
    target.meta = dataclasses.replace(target.meta, version=3)
    assert describe(target) == "main_0@3"


def _probe_cli(capsys, *flags: str) -> tuple[int, str]:
    """`league probe FLAGS` in this process: (exit code, stderr). Refusals come before
    Ray or training start, as a user's process would see them."""
    from league.cli import main

    try:
        code = main(["probe", *flags])
    except SystemExit as exit_info:  # argparse's own refusals
        code = exit_info.code
    return code, capsys.readouterr().err


def test_probe_cli_refuses_a_missing_snapshot(tmp_path, capsys):
    code, err = _probe_cli(capsys, "--snapshot", str(tmp_path / "none"))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("league: error:")


def test_probe_exploits_a_scripted_player(ray_session):
    from league.training.probe import ReferenceTarget, probe

    lines: list[str] = []
    target = ReferenceTarget("random", "tictactoe")
    result = probe(target, minutes=0.3, games=200, seed=2, log=lines.append)
    assert "best response to ref=random for 0.3 min" in lines[0], lines
    assert result.games == 200 and len(result.seats) == 2
    # Random against random scores 0 over both seats; PPO's best response beats it.
    assert result.win_rate > 0.5 and result.mean_score > 0.1, result.format()


@pytest.mark.parametrize(
    ("flags", "complaint"),
    [
        (["--reference", "nobody", "--env", "tictactoe"], "unknown opponent 'nobody'"),
        (["--reference", "random", "--env", "no_such_game"], "no_such_game"),
        (["--reference", "random"], "--env goes with --reference"),
        (["--snapshot", "x", "--reference", "random"], "not allowed with argument"),
    ],
)
def test_probe_cli_refuses_a_bad_scripted_target(flags, complaint, capsys):
    code, err = _probe_cli(capsys, *flags)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("league: error:")
    assert complaint in err, err
