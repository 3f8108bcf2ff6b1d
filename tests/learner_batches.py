"""Helper for tests that look at a real learner's train batch."""

from __future__ import annotations

import copy
from typing import Any


def train_batch(learner: Any, episodes: list[Any]) -> dict[str, Any]:
    """The learner connector's output for ``episodes`` (copied: the pipeline mutates them)."""
    return learner._learner_connector(
        rl_module=learner.module,
        episodes=copy.deepcopy(episodes),
        batch={},
        shared_data={},
        metrics=learner.metrics,
    )
