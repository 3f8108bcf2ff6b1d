"""PPO whose env runners sample the next train batch while the learner trains.

RLlib's PPO alternates: the runners sample a train batch, then wait while the
learner runs its epochs on it, then get the new weights. On a small machine the
two halves take similar time (tictactoe on 2 cores: ~0.5 s of sampling and ~0.5 s
of learning per 4,000 env steps), so each side idles half the time.
`SampleAheadPPO.training_step` asks the remote runners for the next batch before
the learner starts on the current one; the new weights reach the runners right
after that sample (RLlib's weight sync only queues behind it). Each batch is thus
sampled with weights one update older than PPO's: the action log-probs a game was
played with travel with it, so PPO's importance ratio and clipping see the
actual behaviour policy (as they do for a game that already spans an update, see
`batched_env_runner`).

Everything else is PPO's own training step: the learner update on the episodes,
the metrics, the weight sync. Without remote runners (`num_env_runners: 0`) there
is nothing to overlap and PPO's step runs unchanged.

`schedule_clock`, when set (`anneal_over: run`, `league.training.run_clock`), is
what the learners read as the lifetime env steps for their lr and entropy-bonus
schedules (the only use RLlib's learners make of that count).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
from ray.rllib.algorithms.ppo import PPO
from ray.rllib.core import ALL_MODULES
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

SAMPLE_AHEAD_TAG = "league_sample_ahead"
# How long a step waits for the last weight sync to be acknowledged (it has run before
# the sample in flight began; only a dead or hung runner takes this long).
SYNC_FETCH_TIMEOUT_S = 30.0


def _sample_with_metrics(runner: Any) -> tuple[list, dict]:
    return runner.sample(), runner.get_metrics()


class SampleAheadPPO(PPO):
    """PPO with the next batch sampled during this batch's update (module doc)."""

    schedule_clock: Callable[[], int] | None = None
    """The schedules' timestep (default: RLlib's lifetime env steps sampled)."""

    @override(PPO)
    def setup(self, config: Any) -> None:
        super().setup(config)
        runners = self.env_runner_group.num_remote_env_runners() if self.env_runner_group else 0
        if self.learner_group.is_local and runners:
            # The learner in this process now trains while the runners sample: leave
            # them their cores (torch's intra-op threads would contend with them).
            threads = min(torch.get_num_threads(), (os.cpu_count() or 1) - runners)
            torch.set_num_threads(max(1, threads))

    @override(PPO)
    def training_step(self) -> None:
        if not self.samples_ahead:
            return super().training_step()
        group = self.env_runner_group
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, runner_metrics = self._collect_batch()
            # The next batch samples (with the current weights) while this one trains.
            group.foreach_env_runner_async(_sample_with_metrics, tag=SAMPLE_AHEAD_TAG)
            if not episodes:
                return None
            self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = self.learner_group.update(
                episodes=episodes,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: self._schedule_timestep(),
                    NUM_MODULE_STEPS_TRAINED_LIFETIME: self.metrics.peek(
                        (LEARNER_RESULTS, ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME),
                        default=0,
                    ),
                },
                num_epochs=self.config.num_epochs,
                minibatch_size=self.config.minibatch_size,
                shuffle_batch_per_epoch=self.config.shuffle_batch_per_epoch,
            )
            self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            # The last sync ran on each runner before the sample now in flight began,
            # but RLlib only counts it done once fetched, and its sync sends nothing
            # to a runner with max_requests_in_flight_per_env_runner (2) requests out:
            # unfetched, it would drop this sync and leave the runner an update behind
            # (seen on a loaded machine). Fetching it waits for no sample.
            group.fetch_ready_async_reqs(tags="set_state", timeout_seconds=SYNC_FETCH_TIMEOUT_S)
            # Queued on each runner behind the sample in flight (PPO's own sync).
            group.sync_weights(
                from_worker_or_learner_group=self.learner_group,
                policies=set(learner_results[0].keys()) - {ALL_MODULES},
                inference_only=True,
            )
        return None

    @property
    def samples_ahead(self) -> bool:
        """Whether this step is ours (remote runners to overlap) or PPO's own."""
        group = self.env_runner_group
        return group is not None and group.num_remote_env_runners() > 0

    def _schedule_timestep(self) -> int:
        if self.schedule_clock is not None:
            return self.schedule_clock()
        return self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME))

    def _collect_batch(self) -> tuple[list, list[dict]]:
        """The batch sampled ahead (asked for in the last step), topped up by PPO's
        own synchronous sampling when it is short (the first step, a runner lost)."""
        group = self.env_runner_group
        ready = group.fetch_ready_async_reqs(
            tags=SAMPLE_AHEAD_TAG, timeout_seconds=self.config.sample_timeout_s
        )
        episodes = [episode for _, (batch, _) in ready for episode in batch]
        runner_metrics = [metrics for _, (_, metrics) in ready]
        # Counted as RLlib's sampling counts: env steps played (finished games or not).
        played = sum(int(metrics.get(NUM_ENV_STEPS_SAMPLED, 0)) for metrics in runner_metrics)
        short = self.config.total_train_batch_size - played
        if short > 0 and group.num_healthy_remote_env_runners() > 0:
            more, more_metrics = synchronous_parallel_sample(
                worker_set=group,
                max_env_steps=short,
                sample_timeout_s=self.config.sample_timeout_s,
                _uses_new_env_runners=True,
                _return_metrics=True,
            )
            episodes += more
            runner_metrics += more_metrics
        return episodes, runner_metrics
