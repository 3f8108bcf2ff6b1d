"""Helper for tests that compare the batched runners' episodes with RLlib's runner's."""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode
from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO


def agent_data(episode: MultiAgentEpisode) -> dict[str, dict[str, Any]]:
    """Per agent, everything a learner reads, from a numpy episode."""
    assert episode.is_numpy
    data = {}
    for agent, sa in episode.agent_episodes.items():
        data[agent] = {
            "module": sa.module_id,
            "obs": np.asarray(sa.get_observations()["observation"]).tolist(),
            "mask": np.asarray(sa.get_observations()["action_mask"]).tolist(),
            "actions": np.asarray(sa.get_actions()).tolist(),
            "rewards": np.asarray(sa.get_rewards()).tolist(),
            "terminated": sa.is_terminated,
            "truncated": sa.is_truncated,
            "t_started": sa.t_started,
            # RLlib's runner also stores its weights' sequence number, which no
            # learner reads; the batched runners leave it out.
            "extra": sorted(set(sa.extra_model_outputs) - {WEIGHTS_SEQ_NO}),
        }
    return data
