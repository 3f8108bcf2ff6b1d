"""PPO minibatches per module: each module passes over its own rows `num_epochs` times.

RLlib's `MiniBatchCyclicIterator` builds every minibatch from every module and
keeps cycling until the module with the MOST rows has covered `num_epochs`. In a
league the main gets most rows (`main_learner_share`), so each exploiter, with a
few hundred rows, got as many minibatch updates as the main: tens of epochs over
the same rows per iteration (over-fitting them), and every update step paid for
all modules' losses. This iterator gives each module `num_epochs` passes over its
own rows, in `max(1, round(rows / minibatch_size))` near-equal minibatches per
epoch, shuffled each epoch; a step holds only the modules that still have
minibatches left. With one module (self-play) it is PPO's usual schedule.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.minibatch_utils import MiniBatchIteratorBase

MODULE_MINIBATCHES = "module_minibatches"
"""`Learner.update` keyword: module id -> minibatches per epoch, the same on every
data-parallel learner (see `league.training.data_parallel`)."""


def split_bounds(rows: int, parts: int) -> list[int]:
    """Row bounds of `parts` near-equal minibatches."""
    return [int(b) for b in np.linspace(0, rows, parts + 1).round()]


def minibatch_bounds(rows: int, minibatch_size: int) -> list[int]:
    """Row bounds of one epoch's minibatches: near-equal parts of about `minibatch_size`."""
    return split_bounds(rows, max(1, round(rows / minibatch_size)))


class PerModuleEpochIterator(MiniBatchIteratorBase):
    """Minibatches of a multi-agent train batch, `num_epochs` epochs per module."""

    def __init__(
        self,
        batch: MultiAgentBatch,
        *,
        num_epochs: int = 1,
        minibatch_size: int,
        shuffle_batch_per_epoch: bool = True,
        num_total_minibatches: int = 0,
        module_minibatches: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__(
            batch,
            num_epochs=num_epochs,
            minibatch_size=minibatch_size,
            shuffle_batch_per_epoch=shuffle_batch_per_epoch,
            num_total_minibatches=num_total_minibatches,
        )
        if num_total_minibatches:
            # Data-parallel learners must all take the same number of steps.
            raise ValueError("PerModuleEpochIterator does not support num_total_minibatches")
        for module_id, module_batch in batch.policy_batches.items():
            if len(module_batch) == 0:
                raise ValueError(f"the train batch of module {module_id!r} is empty")
            if module_batch.get(SampleBatch.SEQ_LENS) is not None:
                raise ValueError("PerModuleEpochIterator does not slice sequences (RNN batches)")
        self._batch = batch
        self._num_epochs = num_epochs
        self._minibatch_size = minibatch_size
        self._shuffle = shuffle_batch_per_epoch
        # Data-parallel learners pass fixed counts (`module_minibatches`): every
        # learner then takes the same steps over the same modules (torch DDP
        # all-reduces every step). Otherwise about `minibatch_size` rows each.
        self._bounds = {}
        for mid, b in batch.policy_batches.items():
            if module_minibatches is None:
                self._bounds[mid] = minibatch_bounds(len(b), minibatch_size)
                continue
            if mid not in module_minibatches:
                raise ValueError(f"module_minibatches has no count for module {mid!r}")
            parts = module_minibatches[mid]
            if not 1 <= parts <= len(b):
                raise ValueError(
                    f"module {mid!r}: {parts} minibatches from {len(b)} rows is not possible"
                )
            self._bounds[mid] = split_bounds(len(b), parts)

    def steps_per_module(self) -> dict[str, int]:
        """How many minibatch updates each module gets from this batch."""
        return {mid: (len(b) - 1) * self._num_epochs for mid, b in self._bounds.items()}

    def __iter__(self) -> Iterator[MultiAgentBatch]:
        steps = self.steps_per_module()
        for step in range(max(steps.values(), default=0)):
            minibatch = {}
            # Modules in a fixed order: data-parallel learners must run their forward
            # (and so DDP's all-reduces in backward) in the same order, and a batch's
            # module order follows whichever game came first on that learner.
            for module_id in sorted(self._batch.policy_batches):
                module_batch = self._batch.policy_batches[module_id]
                if step >= steps[module_id]:
                    continue
                bounds = self._bounds[module_id]
                parts = len(bounds) - 1
                part = step % parts
                if part == 0 and self._shuffle:
                    module_batch.shuffle()
                start, end = bounds[part], bounds[part + 1]
                minibatch[module_id] = module_batch[start:end]
            yield MultiAgentBatch(minibatch, len(self._batch))
