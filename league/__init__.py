"""League: a league self-play trainer on Ray RLlib. The names a user imports.

Imported lazily (PEP 562), so `import league` or `league.core` loads neither Ray
nor torch until a name that needs them is used:

    from league import TrainConfig, train, load_policy
    train(TrainConfig(env="tictactoe", stop_minutes=5))  # with tictactoe's settings
    train(TrainConfig(game={"env": "kuhn_poker"}, ppo={"lr": 1e-3}))  # by group
    policy = load_policy("runs/default/players/main_0")
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "TrainConfig": "league.config",
    "resolve_config": "league.config",
    "GameSettings": "league.config_groups",
    "RunSettings": "league.config_groups",
    "ResourceSettings": "league.config_groups",
    "PPOSettings": "league.config_groups",
    "ModelSettings": "league.config_groups",
    "EvaluationSettings": "league.config_groups",
    "LeagueConfig": "league.core.config",
    "League": "league.core.league",
    "MatchRecord": "league.core.match",
    "nash_weights": "league.core.nash",
    "RunDir": "league.run",
    "IterationRecord": "league.run",
    "read_progress": "league.run",
    "load_policy": "league.snapshot",
    "save_snapshot": "league.snapshot",
    "SnapshotPolicy": "league.snapshot",
    "MixturePolicy": "league.snapshot",
    "SnapshotError": "league.snapshot",
    "open_store": "league.store",
    "evaluate": "league.tools.evaluation",
    "train": "league.training.loop",
    "probe": "league.training.probe",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'league' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # resolve once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
