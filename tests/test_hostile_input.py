"""Bad or hostile input: one clear line, exit code 2, and nothing already saved changes."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import time
import tracemalloc
from pathlib import Path

import pytest
import torch

from envs.registry import game_spaces
from league.cli import main
from league.core.config import LeagueConfig
from league.core.league import League
from league.core.match import MatchRecord
from league.snapshot import SnapshotError, load_policy, player_metadata, save_snapshot
from rlmodules.masked_policy import masked_policy_spec

MODEL = {"hidden_sizes": [16], "activation": "relu"}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run dir with main_0's weights, as training writes them."""
    run = tmp_path / "run"
    obs_space, act_space = game_spaces("tictactoe")
    torch.manual_seed(0)
    module = masked_policy_spec(obs_space, act_space, MODEL).build()
    meta = player_metadata("tictactoe", MODEL, "main_0", 10)
    save_snapshot(run / "players" / "main_0", module.get_state(), meta)
    return run


def _digest(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def _one_error_line(capsys, expected: str) -> None:
    err = capsys.readouterr().err
    assert err.startswith("league: error:") and err.count("\n") == 1, err
    assert expected in err, err


# ---- export never overwrites unasked ----------------------------------------------


def test_export_refuses_an_existing_out_and_force_replaces_only_a_snapshot(
    run_dir, tmp_path, capsys
):
    argv = ["export", "--run-dir", str(run_dir), "--player", "main_0", "--out"]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "metadata.json").write_text("{}")  # a user's folder that has a metadata.json
    (mine / "notes.txt").write_text("keep me")
    (mine / "sub").mkdir()
    (mine / "sub" / "data.bin").write_bytes(b"\x00" * 10)
    before = _digest(mine)
    assert main([*argv, str(mine)]) == 2
    _one_error_line(capsys, "exists; not overwriting it")
    assert main([*argv, str(mine), "--force"]) == 2  # not a snapshot: never replaced
    _one_error_line(capsys, "not a snapshot")
    assert _digest(mine) == before

    snap = tmp_path / "snap"
    assert main([*argv, str(snap)]) == 0
    assert stat.S_IMODE(snap.stat().st_mode) == 0o777 & ~_umask()  # not a temp dir's 0700
    assert main([*argv, str(snap)]) == 2
    assert main([*argv, str(snap), "--force"]) == 0
    load_policy(snap)

    model = tmp_path / "model.onnx"
    model.write_bytes(b"user data")
    assert main([*argv, str(model), "--format", "onnx"]) == 2
    assert model.read_bytes() == b"user data"
    assert main([*argv, str(model), "--format", "onnx", "--force"]) == 0
    assert stat.S_IMODE(model.stat().st_mode) == 0o666 & ~_umask()  # not 0600


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---- read-only commands open stores read-only ------------------------------------


def test_read_only_commands_leave_a_foreign_database_and_missing_paths_alone(
    tmp_path, run_dir, capsys
):
    foreign = tmp_path / "theirs.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE accounts (id INTEGER)")
    conn.commit()
    conn.close()
    before = foreign.read_bytes()
    assert main(["snapshots", "--run-dir", str(run_dir), "--store", f"sqlite:///{foreign}"]) == 2
    _one_error_line(capsys, "is not a league store")
    assert foreign.read_bytes() == before  # no tables, no WAL switch
    assert not Path(f"{foreign}-wal").exists()

    missing = tmp_path / "nowhere" / "league.sqlite"
    assert main(["snapshots", "--run-dir", str(run_dir), "--store", f"sqlite:///{missing}"]) == 2
    _one_error_line(capsys, "no league store at")
    assert not missing.parent.exists()


def test_a_store_opened_read_only_refuses_writes(tmp_path):
    from league.store import StoreError, open_store

    with open_store(None, tmp_path) as store:
        store.commit({"format": 1}, [], expected_seq=store.seq())
    with open_store(None, tmp_path, read_only=True) as store:
        assert store.state() == {"format": 1}
        with pytest.raises(StoreError, match="read-only"):
            store.commit({"format": 1}, [], expected_seq=store.seq())


# ---- every error is one line --------------------------------------------------------


def test_truncated_latest_json_on_resume_is_one_line(run_dir, capsys):
    checkpoints = run_dir / "checkpoints"
    checkpoints.mkdir()
    (checkpoints / "latest.json").write_text('{"checkpoint": "iter_0')
    assert main(["train", "--resume", "--run-dir", str(run_dir)]) == 2
    _one_error_line(capsys, "latest.json")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ppo:\n  lr: -1\n", "lr must be in (0.0, 1.0]"),
        ("ppo:\n  gamma: 7.5\n", "gamma must be in (0.0, 1.0]"),
        ("ppo:\n  vf_loss_coeff: .nan\n", "vf_loss_coeff must be a finite number"),
        ("run:\n  stop_minutes: .nan\n", "stop_minutes must be a finite number"),
        ("ppo:\n  num_epochs: 1000000000\n", "num_epochs must be <= 1,000"),
        ("run:\n  store: ftp://example.com/x\n", "unsupported URL scheme 'ftp'"),
        ("league:\n  active_set_size: 0\n", "active_set_size must be >= 1"),
        ("run:\n  seed: -1\n", "seed must be in 0..2**32-1"),
        ("resources:\n  num_cpus: 0\n", "num_cpus must be in 1..4096"),
        ("game:\n  env_kwargs: [1, 2]\n", "env_kwargs must be"),
        ("resources:\n  num_learners: 65\n", "num_learners must be in 0..64, got 65"),
        ("resources:\n  num_learners: -1\n", "num_learners must be in 0..64"),
        ("resources:\n  num_cpus_per_learner: -0.5\n", "num_cpus_per_learner must be in [0, 1024]"),
        ("resources:\n  num_gpus_per_learner: .inf\n", "num_gpus_per_learner must be in [0, 64]"),
        (
            "resources:\n  num_gpus_per_learner: 1.5\n",
            "num_gpus_per_learner above 1 must be a whole",
        ),
        ("resources:\n  env_runner_resources: {CPU: 1}\n", "'CPU' is not a custom resource"),
        (
            "resources:\n  env_runner_resources: {node: -1}\n",
            "'node' must be a number in (0, 1000000]",
        ),
        ("resources:\n  env_runner_resources: {node: x}\n", "'node' must be a number"),
        (
            "resources:\n  env_runner_probe_timeout_s: 0\n",
            "env_runner_probe_timeout_s must be in (0, 3600]",
        ),
    ],
)
def test_values_a_run_cannot_use_are_refused(tmp_path, capsys, text, expected):
    config = tmp_path / "c.yaml"
    config.write_text(text)
    assert main(["train", "--config", str(config), "--run-dir", str(tmp_path / "r")]) == 2
    _one_error_line(capsys, expected)
    assert not (tmp_path / "r").exists()


def test_debug_shows_the_traceback_instead(tmp_path):
    from league.config import ConfigError

    config = tmp_path / "c.yaml"
    config.write_text("ppo:\n  lr: -1\n")
    with pytest.raises(ConfigError):
        main(["--debug", "train", "--config", str(config), "--run-dir", str(tmp_path / "r")])


def test_billion_laughs_config_is_refused_without_expanding_it(tmp_path, capsys):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    config = tmp_path / "laughs.yaml"
    config.write_text("\n".join(lines) + "\nppo:\n  lr: *a9\n")
    started = time.perf_counter()
    tracemalloc.start()
    try:
        assert main(["train", "--config", str(config), "--run-dir", str(tmp_path / "r")]) == 2
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 5 and peak < 100 * 1024 * 1024
    err = capsys.readouterr().err
    assert err.startswith("league: error:") and len(err) < 1000


def test_evaluate_refuses_absurd_game_counts(run_dir, capsys):
    assert main(["evaluate", "--run-dir", str(run_dir), "--games", "1000000000"]) == 2
    _one_error_line(capsys, "--games must be in 1..1,000,000")


# ---- snapshot locations -------------------------------------------------------------


def test_remote_schemes_are_off_unless_allowed(monkeypatch):
    """No child process (credential helpers) and no network connection is attempted."""
    import socket
    import subprocess

    def forbidden(*args, **kwargs):
        raise AssertionError(f"attempted: {args!r:.80}")

    monkeypatch.setattr(socket.socket, "connect", forbidden)
    monkeypatch.setattr(subprocess.Popen, "__init__", forbidden)
    monkeypatch.delenv("LEAGUE_SNAPSHOT_SCHEMES", raising=False)
    started = time.perf_counter()
    for uri in ("abfs://container/x", "s3://bucket/x", "gs://bucket/x"):
        with pytest.raises(SnapshotError, match="LEAGUE_SNAPSHOT_SCHEMES"):
            load_policy(uri)
    assert time.perf_counter() - started < 1.0  # nothing was contacted
    monkeypatch.setenv("LEAGUE_SNAPSHOT_SCHEMES", "s3")
    with pytest.raises(SnapshotError, match="query parameters"):
        load_policy("s3://bucket/x?endpoint_override=evil.example:80")


# ---- league logic does not trust its callers ----------------------------------------


def _match(episode: str) -> MatchRecord:
    return MatchRecord(
        episode_id=episode,
        modules={"player_1": "main_0", "player_2": "main_0@0"},
        outcomes={"player_1": "win", "player_2": "loss"},
        length=5,
        iteration=1,
    )


def test_league_counts_an_episode_once_and_changes_all_or_nothing():
    league = League(LeagueConfig())
    league.take_snapshot("main_0", 0)
    assert league.record([_match("e1"), _match("e1")]) == 1
    assert league.record([_match("e1")]) == 0
    once = League(LeagueConfig())
    once.take_snapshot("main_0", 0)
    once.record([_match("e1")])
    once.record([])  # the same two decays
    assert league.payoff.games("main_0", "main_0@0") == once.payoff.games("main_0", "main_0@0")

    state = league.get_state()
    broken = {k: v for k, v in state.items() if k != "ratings"}
    with pytest.raises(ValueError, match="missing ratings"):
        league.set_state(broken)
    bad_payoff = {**state, "payoff": "not a table"}
    with pytest.raises(ValueError):
        league.set_state(bad_payoff)
    assert league.get_state() == state  # unchanged

    league.take_snapshot("main_0", 1)
    with pytest.raises(ValueError, match="twice"):
        league.retire(["main_0@0", "main_0@0"])
    assert "main_0@0" in league.snapshots
