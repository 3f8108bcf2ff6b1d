"""A tiny league run's settings and the command line, for the tests that run
`league train` as a user does (in a child process, with its own Ray)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TINY_SETTINGS = {
    "num_env_runners": 0,
    "num_envs_per_env_runner": 2,
    "train_batch_size": 300,
    "minibatch_size": 100,
    "num_epochs": 1,
    "hidden_sizes": [16],
    "eval_interval": 0,
    "checkpoint_interval": 3,
    "league": {"snapshot_step_budget": 150},
}


def tiny_config(path: Path, **changes: object) -> Path:
    """Write the tiny settings (with `changes`; `league` merges key by key) to `path`."""
    settings = {**TINY_SETTINGS, **changes}
    if isinstance(changes.get("league"), dict):
        settings["league"] = {**TINY_SETTINGS["league"], **changes["league"]}
    path.write_text(yaml.safe_dump(settings))
    return path


def league_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "league.cli", *args]


def own_ray_env() -> dict[str, str]:
    """The environment without RAY_ADDRESS: the child starts its own Ray."""
    return {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
