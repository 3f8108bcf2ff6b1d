"""One configuration, resolved once: the Python API, a config file and the CLI give
the same settings for every registry game, fresh and resumed (`resolve_config`)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from envs.registry import REGISTRY_NAMES
from league.cli import build_parser
from league.cli_flags import train_config_from_args
from league.config import ConfigError, TrainConfig, resolve_config
from league.core.config import LeagueConfig
from league.presets import game_settings
from league.run import RunDir, write_json_atomic

GIVEN = {"run": {"seed": 3, "stop_minutes": 2.0}, "league": {"elo_k": 20.0}}
GIVEN_FLAGS = ["--seed", "3", "--stop-minutes", "2", "--league.elo-k", "20"]


def _from_cli(*flags: str) -> TrainConfig:
    return train_config_from_args(build_parser().parse_args(["train", *flags]))


def _resumable(path, cfg: TrainConfig) -> str:
    """A run dir as a run leaves it: config.json and a checkpoint pointer."""
    run = RunDir(str(path))
    run.checkpoints.mkdir(parents=True)
    write_json_atomic(run.config_file, cfg.to_dict())
    write_json_atomic(run.latest_file, {"checkpoint": "c", "env_steps": 0, "iteration": 0})
    return str(path)


@pytest.mark.parametrize("game", REGISTRY_NAMES)
def test_api_file_and_flags_resolve_alike_fresh_and_resumed(game, tmp_path):
    api = TrainConfig(env=game, **GIVEN)
    config_file = tmp_path / "settings.yaml"
    config_file.write_text(yaml.safe_dump({"game": {"env": game}, **GIVEN}))
    from_file = resolve_config(config_file=config_file)
    from_flags = _from_cli("--env", game, *GIVEN_FLAGS)
    from_both = _from_cli("--config", str(config_file), "--seed", "3")
    assert api == from_file == from_flags == from_both == TrainConfig.from_dict(api.to_dict())
    # The game's measured settings are in, under the given values.
    for group, values in game_settings(game).items():
        for key, value in values.items():
            given = GIVEN.get(group, {}).get(key, value)
            assert getattr(getattr(api, group), key) == given, (group, key)
    assert api.run.seed == 3 and api.league.elo_k == 20.0

    run_dir = _resumable(tmp_path / "run", api.replace(run_dir=str(tmp_path / "run")))
    later = {"run": {"run_dir": run_dir, "stop_minutes": 5.0}, "league": {"pfsp_p": 1.5}}
    resumed_api = resolve_config(later, resume=True)
    resumed_cli = _from_cli(
        "--resume", "--run-dir", run_dir, "--stop-minutes", "5", "--league.pfsp-p", "1.5"
    )
    expected = api.replace(
        run_dir=run_dir,
        stop_minutes=5.0,
        league=dataclasses.replace(api.league, pfsp_p=1.5),  # the run's other league keys kept
    )
    assert resumed_api == resumed_cli == expected


def test_the_order_is_values_then_file_then_stored_then_preset_then_game(tmp_path):
    config_file = tmp_path / "settings.toml"
    config_file.write_text('[game]\nenv = "leduc_poker"\n[ppo]\nlr = 0.002\nentropy_coeff = 0.3\n')
    cfg = resolve_config({"lr": 0.001}, config_file=config_file)
    assert cfg.ppo.lr == 0.001 and cfg.ppo.entropy_coeff == 0.3  # values over the file
    assert cfg.ppo.magnet_coeff == game_settings("leduc_poker")["ppo"]["magnet_coeff"]  # the game's
    # A preset named goes over the game's settings, under the values given.
    board = TrainConfig(env="leduc_poker", preset="board")
    assert board.league.main_exploiter_reset_to == "main"
    assert board.ppo.entropy_coeff == game_settings("leduc_poker")["ppo"]["entropy_coeff"]
    # A resumed run's stored settings go under the file and the values given.
    run_dir = _resumable(tmp_path / "run", cfg.replace(run_dir=str(tmp_path / "run"), seed=9))
    resumed = resolve_config({"run_dir": run_dir}, config_file=config_file, resume=True)
    assert resumed.run.seed == 9 and resumed.ppo.lr == 0.002 and resumed.ppo.entropy_coeff == 0.3


def test_direct_construction_is_resolved_and_replace_keeps_what_it_is_given():
    assert TrainConfig(env="connect_four") == TrainConfig.from_dict({"env": "connect_four"})
    c4 = TrainConfig(env="connect_four")
    assert c4.model.encoder == game_settings("connect_four")["model"]["encoder"]
    reseeded = dataclasses.replace(c4, run=dataclasses.replace(c4.run, seed=5))
    assert reseeded == c4.replace(seed=5) == TrainConfig(env="connect_four", seed=5)
    # Given explicitly, a whole league object is taken as it is.
    plain = TrainConfig(env="tictactoe", league=LeagueConfig())
    assert plain.league == LeagueConfig()
    with pytest.raises(TypeError, match="unknown settings"):
        TrainConfig(env="tictactoe", learning_rate=0.1)


def test_a_resume_is_refused_before_anything_is_read_or_written(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        resolve_config({"run_dir": str(tmp_path / "none")}, resume=True)
    run_dir = _resumable(tmp_path / "run", TrainConfig(run_dir=str(tmp_path / "run")))
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").rglob("*.json")}
    with pytest.raises(ConfigError, match="resumes only so"):
        resolve_config({"run_dir": run_dir, "algo": "appo"}, resume=True)
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").rglob("*.json")} == before
    assert json.loads((tmp_path / "run/config.json").read_text())["ppo"]["algo"] == "ppo"


def test_a_run_stored_before_the_groups_resumes_with_its_settings(tmp_path):
    """A config.json of the last release holds flat keys: `--resume` reads it as the
    grouped settings it means (no note: the user did not write it), and the store URL
    is found at either place."""
    grouped = TrainConfig(env="kuhn_poker", seed=4, lr=0.002, store="sqlite", league={"elo_k": 9.0})
    flat = {
        key: value
        for group, values in grouped.to_dict().items()
        for key, value in ({"league": values}.items() if group == "league" else values.items())
    }
    run = RunDir(str(tmp_path / "old"))
    run.checkpoints.mkdir(parents=True)
    write_json_atomic(run.config_file, {**flat, "run_dir": str(run.path)})
    write_json_atomic(run.latest_file, {"checkpoint": "c", "env_steps": 0, "iteration": 0})
    notes: list[str] = []
    args = build_parser().parse_args(["train", "--resume", "--run-dir", str(run.path)])
    resumed = train_config_from_args(args, note=notes.append)
    assert resumed == grouped.replace(run_dir=str(run.path)) and notes == []
    assert run.stored_store_url() == "sqlite"
