"""A tiny league run's settings and the command line, for the tests that run
`league train` as a user does (in a child process, with its own Ray)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

from league.presets import merge_settings

ROOT = Path(__file__).resolve().parents[1]
TINY_SETTINGS = {
    "resources": {"num_env_runners": 0, "num_envs_per_env_runner": 2, "num_cpus": 2},
    "ppo": {"train_batch_size": 300, "minibatch_size": 100, "num_epochs": 1},
    "model": {"hidden_sizes": [16]},
    "evaluation": {"eval_interval": 0},
    "run": {"checkpoint_interval": 3},
    "league": {"snapshot_step_budget": 150},
}


TINY_IN_PROCESS = {
    "num_envs_per_env_runner": 4,
    "train_batch_size": 200,
    "minibatch_size": 100,
    "num_epochs": 1,
    "hidden_sizes": [16],
    "stop_timesteps": 400,
    "eval_interval": 0,
    "dashboard": False,
}
"""A two-iteration run trained in the test's own process (`TrainConfig.from_dict`,
flat keys): add `env`, `run_dir` and `num_env_runners`."""


def tiny_config(path: Path, **changes: dict[str, object]) -> Path:
    """Write the tiny settings (with `changes`, group by group, key by key) to `path`."""
    path.write_text(yaml.safe_dump(merge_settings(TINY_SETTINGS, changes)))
    return path


def league_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "league.cli", *args]


def own_ray_env() -> dict[str, str]:
    """The environment without RAY_ADDRESS: the child starts its own Ray."""
    return {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
