"""PPO learner for a league: frozen opponents' experience never reaches the loss.

Episodes sampled against frozen snapshots carry the snapshots' module ids. The
snapshots live on env runners only, so the learner's MultiRLModule lacks them and
PPO's advantage estimation would fail on their ids. A connector piece right after
`AgentToModuleMapping` drops every module id the learner does not train.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.common.agent_to_module_mapping import AgentToModuleMapping
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.utils.annotations import override


class DropUntrainedModules(ConnectorV2):
    """Removes batch entries of modules the learner does not hold or does not train."""

    def __call__(self, *, rl_module: Any, batch: dict[str, Any], **kwargs: Any) -> Any:
        trained = set(rl_module.keys())
        for module_id in list(batch):
            if module_id not in trained:
                del batch[module_id]
        return batch


class LeaguePPOLearner(PPOTorchLearner):
    @override(PPOTorchLearner)
    def build(self) -> None:
        super().build()
        if self._learner_connector is not None:
            self._learner_connector.insert_after(AgentToModuleMapping, DropUntrainedModules())
