"""RunDir: the one object that knows where everything of a run lives.

    config.json              the TrainConfig of the run (resume reads it back)
    progress.jsonl           one IterationRecord (JSON) per iteration
    league.sqlite            the embedded league store (default)
    checkpoints/iter_NNNNNN  RLlib Algorithm checkpoints (`save_to_path`)
    checkpoints/latest.json  which checkpoint is complete and newest
    players/<id>/            each trainable player's latest weights as a snapshot
    snapshots/<id>/          frozen league snapshots (`<player>@<version>`)
    tensorboard/             TensorBoard event files
    logs/                    Ray's and RLlib's log lines (ray.log) and Ray's session logs
    archive/snapshots/<id>/  retired snapshots, with retired_snapshots: archive
    report/                  `league report` PNGs

Nothing else in the code base joins these names onto a run path.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from league.core.ids import parse_module_id

CHECKPOINT_PREFIX = "iter_"


class RunDirError(ValueError):
    """A run directory that cannot be used as asked (e.g. resume without a checkpoint)."""


@dataclass(frozen=True)
class RunDir:
    """One property per path of a run (deliberately repetitive: each is a name)."""

    path: Path

    def __init__(self, path: str | os.PathLike[str]) -> None:
        # Absolute: RLlib's checkpointing reads a relative path as a URI and fails.
        object.__setattr__(self, "path", Path(path).expanduser().absolute())

    @property
    def config_file(self) -> Path:
        return self.path / "config.json"

    @property
    def progress_file(self) -> Path:
        return self.path / "progress.jsonl"

    @property
    def store_file(self) -> Path:
        return self.path / "league.sqlite"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def latest_file(self) -> Path:
        return self.checkpoints / "latest.json"

    def checkpoint_dir(self, iteration: int) -> Path:
        return self.checkpoints / f"{CHECKPOINT_PREFIX}{iteration:06d}"

    def checkpoint_dirs(self) -> list[Path]:
        """Every checkpoint directory, oldest first."""
        return sorted(p for p in self.checkpoints.glob(f"{CHECKPOINT_PREFIX}*") if p.is_dir())

    @property
    def players(self) -> Path:
        return self.path / "players"

    @property
    def snapshots(self) -> Path:
        return self.path / "snapshots"

    @property
    def tensorboard(self) -> Path:
        return self.path / "tensorboard"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def archive(self) -> Path:
        return self.path / "archive"

    @property
    def report(self) -> Path:
        return self.path / "report"

    def player_dir(self, player: str) -> Path:
        return self.players / player

    def snapshot_dir(self, snapshot_id: str) -> Path:
        return self.snapshots / snapshot_id

    def module_dir(self, module_id: str) -> Path:
        """Where a trainable player's latest weights or a frozen snapshot are saved."""
        parsed = parse_module_id(module_id)
        return self.snapshot_dir(module_id) if parsed.is_snapshot else self.player_dir(module_id)

    def snapshot_dirs(self) -> list[Path]:
        """Every saved frozen snapshot, sorted by id."""
        return sorted(p for p in self.snapshots.glob("*@*") if p.is_dir())

    def latest_snapshot_dirs(self, player: str, count: int) -> list[Path]:
        """The ``count`` latest snapshots of trainable ``player`` (by version, not by
        name: @10 after @2), oldest first."""
        versions = {}
        for path in self.snapshot_dirs():
            module = parse_module_id(path.name)
            if module.player == player:
                versions[path] = module.version
        return sorted(versions, key=versions.__getitem__)[-count:] if count > 0 else []

    def latest_checkpoint(self) -> dict[str, Any]:
        if not self.path.is_dir():
            raise RunDirError(f"run dir {str(self.path)!r} does not exist")
        if not self.latest_file.is_file():
            raise RunDirError(f"run dir {str(self.path)!r} has no checkpoint to resume from")
        return read_json_object(self.latest_file)

    def load_config(self) -> dict[str, Any]:
        if not self.config_file.is_file():
            raise RunDirError(f"run dir {str(self.path)!r} has no config.json")
        return read_json_object(self.config_file)

    def stored_store_url(self) -> str | None:
        """The league store URL config.json names (None: the run dir's SQLite file).
        A run stored before the settings had groups keeps it at the top level."""
        stored = self.load_config()
        run = stored.get("run")
        url = run.get("store") if isinstance(run, dict) else stored.get("store")
        return url if isinstance(url, str) else None


MAX_RUN_JSON_BYTES = 1024 * 1024


def read_json_object(path: Path) -> dict[str, Any]:
    """A run file's JSON object, size-limited, with one-line errors for a truncated or
    hand-broken file (a crash never truncates them: they are replaced atomically)."""
    try:
        size = path.stat().st_size
        if size > MAX_RUN_JSON_BYTES:
            raise RunDirError(f"{path}: {size:,} bytes is more than {MAX_RUN_JSON_BYTES:,}")
        data = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError, RecursionError, json.JSONDecodeError) as err:
        raise RunDirError(f"{path}: unreadable: {err}") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: must hold a JSON object")
    return data


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON beside `path`, then rename: readers never see half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)
