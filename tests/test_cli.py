"""The `league` command: bad input gives one clear line and exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from league.cli import build_parser, main, train_config_from_args
from league.config import TrainConfig
from league.run import RunDir


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # its own Ray
    return subprocess.run(
        [sys.executable, "-m", "league.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env=env,
    )


def test_unknown_game_is_refused_with_known_names(tmp_path):
    proc = run_cli("train", "--env", "chess", "--run-dir", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert "unknown game 'chess'" in proc.stderr and "tictactoe" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad.toml", "env = \n[[", "malformed"),
        ("bad.yaml", "env: [tictactoe\n", "malformed"),
        ("keys.yaml", "envv: tictactoe\n", "unknown keys ['envv']"),
        ("type.toml", 'stop_timesteps = "lots"\n', "stop_timesteps must be"),
        ("list.yaml", "- 1\n- 2\n", "mapping"),
        ("conf.json", "{}", ".yaml, .yml or .toml"),
    ],
)
def test_malformed_config_file_is_refused(tmp_path, capsys, name, text, expected):
    path = tmp_path / name
    path.write_text(text)
    code = main(["train", "--config", str(path), "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("league: error:") and expected in err
    assert not (tmp_path / "r").exists()


def test_missing_config_file(tmp_path, capsys):
    assert main(["train", "--config", str(tmp_path / "nope.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_resume_on_missing_run_dir(tmp_path):
    proc = run_cli("train", "--resume", "--run-dir", str(tmp_path / "missing"))
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_resume_on_run_dir_without_checkpoint(tmp_path, capsys):
    assert main(["train", "--resume", "--run-dir", str(tmp_path)]) == 2
    assert "no checkpoint" in capsys.readouterr().err


def test_bad_flag_values_are_refused(tmp_path, capsys):
    assert main(["train", "--stop-timesteps", "0", "--run-dir", str(tmp_path / "r")]) == 2
    assert "stop_timesteps must be >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--stop-minutes", "soon"])
    assert exit_info.value.code == 2


def test_evaluate_refuses_missing_run_dir_and_player(tmp_path, capsys):
    assert main(["evaluate", "--run-dir", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["evaluate", "--run-dir", str(tmp_path), "--player", "main_7"]) == 2
    assert "no player 'main_7'" in capsys.readouterr().err


def test_league_flag_value_is_checked_by_league_config(tmp_path, capsys):
    argv = ["train", "--league.pfsp-weighting", "steep", "--run-dir", str(tmp_path / "r")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("league: error: pfsp_weighting must be one of")
    assert len(err.splitlines()) == 1 and not (tmp_path / "r").exists()


def test_resume_precedence_flags_over_file_over_stored_config(tmp_path):
    run = RunDir(tmp_path / "run")
    run.checkpoints.mkdir(parents=True)
    run.latest_file.write_text("{}")
    stored = TrainConfig(seed=1, lr=0.01, num_epochs=3, league={"elo_k": 20.0, "max_snapshots": 9})
    run.config_file.write_text(json.dumps(stored.to_dict()))
    config = tmp_path / "cfg.yaml"
    config.write_text("ppo:\n  lr: 0.02\nleague:\n  active_set_size: 4\n")
    argv = ["train", "--resume", "--run-dir", str(run.path), "--config", str(config)]
    args = build_parser().parse_args([*argv, "--seed", "5", "--league.max-snapshots", "7"])
    cfg = train_config_from_args(args)
    assert cfg.run.seed == 5 and cfg.league.max_snapshots == 7  # flags
    assert cfg.ppo.lr == 0.02 and cfg.league.active_set_size == 4  # config file
    assert cfg.ppo.num_epochs == 3 and cfg.league.elo_k == 20.0  # stored config
    assert cfg.ppo.gamma == TrainConfig().ppo.gamma  # default


def test_export_refuses_a_malformed_player_id(tmp_path, capsys):
    argv = ["export", "--run-dir", str(tmp_path), "--player", "main_0@1", "--version", "2"]
    assert main([*argv, "--out", str(tmp_path / "x")]) == 2
    assert "cannot snapshot a snapshot" in capsys.readouterr().err
    assert main(["evaluate", "--run-dir", str(tmp_path), "--player", "../etc"]) == 2
    assert "not a league module id: '../etc'" in capsys.readouterr().err


def test_a_run_that_fails_inside_ends_in_one_line_with_its_traceback_kept(tmp_path):
    """A user's game that breaks mid-run: one `league: error:` line with the cause,
    exit 70, the traceback in RUN_DIR/logs/error.log (not on the console)."""
    run = tmp_path / "r"
    proc = run_cli(
        "train", "--env", "toy_games:crashing_nim", "--run-dir", str(run),
        "--resources.num-env-runners", "0", "--resources.num-envs-per-env-runner", "2",
        "--ppo.train-batch-size", "200", "--ppo.minibatch-size", "100", "--ppo.num-epochs", "1",
        "--model.hidden-sizes", "8", "--stop-timesteps", "2000", "--no-run.dashboard", "--resources.num-cpus", "1",
        cwd=Path(__file__).parent,
    )  # fmt: skip
    assert proc.returncode == 70, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("league: error:")]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "RuntimeError: the rules of this game broke" in lines[0]
    assert "more detail" not in lines[0] and str(run / "logs" / "error.log") in lines[0]
    assert "Traceback" not in proc.stderr
    assert "more detail" in (run / "logs" / "error.log").read_text()


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ["--env", "tictactoe", "--model.shared-vf", "--model.centralized-critic"],
            "simultaneous-move game",
        ),
        (["--env", "rps", "--model.centralized-critic"], "centralized_critic needs shared_vf"),
        (["--model.curiosity-coeff", "0.1"], "curiosity_coeff > 0 needs world_model"),
        (["--ppo.algo", "appo", "--model.shared-vf"], "shared_vf needs algo ppo"),
        (["--env", "simple_tag", "--model.shared-vf"], "shared_vf and world_model read one"),
        (
            [
                "--env",
                "simple_tag",
                "--league.main-mix-by-side",
                '{"wolf": {"main_pfsp_prob": 0.1}}',
            ],
            "main_mix_by_side names ['wolf'], not a side of this game (its sides: adversary, agent)",
        ),
        (
            ["--env", "rps", "--league.main-mix-by-side", '{"agent": {"main_pfsp_prob": 0.35}}'],
            "main_mix_by_side is for games of several sides",
        ),
        (
            [
                "--env",
                "simple_tag",
                "--league.main-mix-by-side",
                '{"agent": {"main_pfsp_prob": 0.9, "main_exploiter_prob": 0.3}}',
            ],
            "main_mix_by_side['agent']: the shares named sum to 1.2, more than 1",
        ),
        (
            ["--ppo.train-batch-size", "100", "--ppo.minibatch-size", "200"],
            "minibatch_size must not",
        ),
    ],
)
def test_a_refused_combination_leaves_nothing_behind(tmp_path, capsys, flags, expected):
    """Every combination check runs with the others, before a run dir or Ray."""
    import ray

    run = tmp_path / "r"
    ray_was_running = ray.is_initialized()  # the suite's session may have started one
    assert main(["train", *flags, "--run-dir", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("league: error:") and expected in err and err.count("\n") == 1
    assert not run.exists() and ray.is_initialized() == ray_was_running
