"""Run-dir retention: the newest checkpoints and the pinned ones stay; snapshot folders
the league retired go (or move to the archive) at a checkpoint, not before."""

from __future__ import annotations

from pathlib import Path

import pytest

from league.config import ConfigError, TrainConfig
from league.run import RunDir
from league.training.loop import PINNED_CHECKPOINT, prune_checkpoints, sweep_retired_snapshots


def make_checkpoints(run: RunDir, iterations: list[int]) -> None:
    for it in iterations:
        (run.checkpoint_dir(it)).mkdir(parents=True)
        (run.checkpoint_dir(it) / "state.pkl").write_bytes(b"x")


def test_the_newest_and_the_pinned_checkpoints_stay(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    make_checkpoints(run, [10, 20, 30, 40, 50])
    (run.checkpoint_dir(20) / PINNED_CHECKPOINT).touch()
    prune_checkpoints(run, keep=2)
    assert [p.name for p in run.checkpoint_dirs()] == [
        "iter_000020",
        "iter_000040",
        "iter_000050",
    ]


def make_snapshots(run: RunDir, ids: list[str]) -> None:
    for sid in ids:
        run.snapshot_dir(sid).mkdir(parents=True)
        (run.snapshot_dir(sid) / "weights.safetensors").write_bytes(b"w")


@pytest.mark.parametrize("archive", [False, True])
def test_snapshots_the_league_no_longer_holds_are_swept(tmp_path: Path, archive: bool) -> None:
    run = RunDir(tmp_path)
    make_snapshots(run, ["main_0@1", "main_0@2", "main_0@3"])
    sweep_retired_snapshots(run, ["main_0@2", "main_0@3", "ref=minimax"], archive=archive)
    assert [p.name for p in run.snapshot_dirs()] == ["main_0@2", "main_0@3"]
    archived = run.archive / "snapshots" / "main_0@1" / "weights.safetensors"
    assert archived.is_file() == archive


def test_retention_settings_are_checked() -> None:
    cfg = TrainConfig.from_dict({"env": "tictactoe"})
    assert (cfg.run.keep_checkpoints, cfg.run.retired_snapshots) == (2, "delete")
    with pytest.raises(ConfigError, match="keep_checkpoints must be >= 1"):
        TrainConfig.from_dict({"env": "tictactoe", "keep_checkpoints": 0})
    with pytest.raises(ConfigError, match="unknown retired_snapshots value 'burn'"):
        TrainConfig.from_dict({"env": "tictactoe", "retired_snapshots": "burn"})
