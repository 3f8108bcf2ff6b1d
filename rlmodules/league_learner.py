"""PPO and APPO learners for a league: frozen opponents' experience never reaches the loss.

Episodes sampled against frozen snapshots carry the snapshots' module ids. The
snapshots live on env runners only, so the learner's MultiRLModule lacks them and
PPO's advantage estimation (or APPO's V-trace loss) would fail on their ids. A
connector piece right after `AgentToModuleMapping` drops every module id the
learner does not train. Both algorithms build their learner connector pipeline
from the same default pieces, so the piece goes to the same place in each.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Collection
from typing import Any

from ray.rllib.algorithms.appo.torch.appo_torch_learner import APPOTorchLearner
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.common.agent_to_module_mapping import AgentToModuleMapping
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator

from rlmodules.magnet import MagnetRegularized
from rlmodules.minibatches import MODULE_MINIBATCHES, PerModuleEpochIterator
from rlmodules.teacher import TeacherRegularized


class DropUntrainedModules(ConnectorV2):
    """Removes batch entries of modules the learner does not hold or does not train."""

    def __call__(self, *, rl_module: Any, batch: dict[str, Any], **kwargs: Any) -> Any:
        trained = set(rl_module.keys())
        for module_id in list(batch):
            if module_id not in trained:
                del batch[module_id]
        return batch


def insert_drop_untrained_modules(learner: Learner) -> None:
    """Put `DropUntrainedModules` into a built learner's connector pipeline."""
    if learner._learner_connector is not None:
        learner._learner_connector.insert_after(AgentToModuleMapping, DropUntrainedModules())


class LeaguePPOLearner(TeacherRegularized, MagnetRegularized, PPOTorchLearner):
    """PPO's learner minus frozen snapshots' rows, with per-module epochs
    (`PerModuleEpochIterator`: each player gets `num_epochs` passes over its own
    rows, not as many updates as the player with the most rows) and the optional
    pulls toward each player's magnet (`MagnetRegularized`) and toward a scripted
    teacher's moves (`TeacherRegularized`)."""

    @override(PPOTorchLearner)
    def build(self) -> None:
        super().build()
        insert_drop_untrained_modules(self)

    @override(PPOTorchLearner)
    def _create_iterator_if_necessary(self, *, num_total_minibatches: int = 0, **kwargs: Any):
        # Data-parallel learners get the same per-module counts (league.training.data_parallel).
        module_minibatches = kwargs.pop(MODULE_MINIBATCHES, None)
        batch_iter = super()._create_iterator_if_necessary(
            num_total_minibatches=num_total_minibatches, **kwargs
        )
        # RLlib chose its cyclic iterator and normalised the arguments (a missing
        # minibatch_size becomes the whole batch); keep its batch and settings.
        if type(batch_iter) is not MiniBatchCyclicIterator or num_total_minibatches:
            return batch_iter
        return PerModuleEpochIterator(
            batch_iter._batch,
            num_epochs=batch_iter._num_epochs,
            minibatch_size=batch_iter._minibatch_size,
            shuffle_batch_per_epoch=batch_iter._shuffle_batch_per_epoch,
            module_minibatches=module_minibatches,
        )


class LeagueAPPOLearner(TeacherRegularized, MagnetRegularized, APPOTorchLearner):
    """APPO's learner updates in a background thread that keeps going while the driver
    reads weights (snapshots, checkpoints) and writes them (league resets). A write
    in the middle of an update breaks its backward pass (autograd sees a parameter
    changed in place) and the thread dies, which leaves RLlib waiting forever.

    So one lock spans each whole update (from `before_gradient_based_update` to
    `after_gradient_based_update`, forward and backward included) and every state
    read or write; a read returns a copy, since RLlib's numpy state of CPU tensors
    shares their memory and a later step would change it.

    Data-parallel learners must also apply a write at the same step, so they can
    first wait for every update handed to them (`wait_for_queued_updates`).
    """

    QUEUED_UPDATES_TIMEOUT_S = 600.0

    @override(APPOTorchLearner)
    def build(self) -> None:
        self._league_weights_lock = threading.RLock()
        self._league_updates = threading.Condition()
        self._league_updates_given = 0
        self._league_updates_done = 0
        super().build()
        insert_drop_untrained_modules(self)

    @override(APPOTorchLearner)
    def update(self, *args: Any, **kwargs: Any) -> Any:
        # Each call hands the learner thread one batch, i.e. one gradient update.
        with self._league_updates:
            self._league_updates_given += 1
        return super().update(*args, **kwargs)

    def wait_for_queued_updates(self) -> None:
        """Block until the learner thread has run every update handed to it."""
        with self._league_updates:
            if not self._league_updates.wait_for(
                lambda: self._league_updates_done >= self._league_updates_given,
                timeout=self.QUEUED_UPDATES_TIMEOUT_S,
            ):
                raise TimeoutError(
                    f"APPO learner thread ran {self._league_updates_done} of "
                    f"{self._league_updates_given} updates in {self.QUEUED_UPDATES_TIMEOUT_S:.0f} s"
                )

    @override(APPOTorchLearner)
    def before_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        self._league_weights_lock.acquire()
        super().before_gradient_based_update(timesteps=timesteps)

    @override(APPOTorchLearner)
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        try:
            super().after_gradient_based_update(timesteps=timesteps)
        finally:
            self._league_weights_lock.release()
            with self._league_updates:
                self._league_updates_done += 1
                self._league_updates.notify_all()

    @override(APPOTorchLearner)
    def get_state(
        self,
        components: str | Collection[str] | None = None,
        *,
        not_components: str | Collection[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        with self._league_weights_lock:
            state = super().get_state(components, not_components=not_components, **kwargs)
            return copy.deepcopy(state)

    @override(APPOTorchLearner)
    def set_state(self, state: dict[str, Any]) -> None:
        with self._league_weights_lock:
            super().set_state(state)
