"""Data-parallel learners for turn-based league games: shard whole games.

With `num_learners >= 2` RLlib's LearnerGroup splits a train batch of episodes
across learners with `ShardEpisodesIterator`, which slices episodes to equalise
lengths. A turn-based multi-agent episode cut mid-turn breaks PPO's learner
connector (`AddOneTsToEpisodesAndTruncate` raises). And torch DDP needs every
learner to run the same modules in the same update steps: a player whose games
all landed on one learner would leave the other learners' all-reduce waiting
forever.

So `WholeGameTrainingData.shard` hands each learner whole games, balanced by
length, with every trainable player in every shard (a player with fewer games
than learners has a game copied to the shards that lack one), and tells every
learner the same per-player minibatch counts (`module_minibatches`), computed
from the whole batch, for `PerModuleEpochIterator`. Each learner thus runs
identical update steps over the same modules, on its own rows.

`WholeGameLearnerGroup` uses it for episode updates with two or more remote
learners; `DataParallelPPOConfig` builds that learner group.

APPO's learners train in a background thread each, fed by a queue (RLlib's
`IMPALALearner`), and RLlib hands each learner a share of the runners' episode
refs, which need not hold every player. `WholeGameAPPOLearnerGroup` resolves the
refs on the driver and shards whole games the same way, and hands every learner
its shard in one synchronous call (the call only enqueues the batch; the runners
keep sampling): an asynchronous call may be dropped for one learner and not the
other, and then the learners' update steps, which DDP pairs one to one, would
stop matching. Weight writes (league resets) first wait until every learner has
run all the updates it was given, so all of them apply the write at the same step.
`DataParallelAPPOConfig` builds that learner group.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from ray.rllib.algorithms.appo import APPOConfig
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.learner.learner_group import LearnerGroup
from ray.rllib.core.learner.training_data import TrainingData
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

from rlmodules.minibatches import MODULE_MINIBATCHES


def episode_module_steps(episode: MultiAgentEpisode) -> Counter[str]:
    """Env steps each module acted in one game."""
    steps: Counter[str] = Counter()
    for agent_episode in episode.agent_episodes.values():
        steps[agent_episode.module_id] += len(agent_episode)
    return steps


def shard_whole_games(
    episodes: Sequence[MultiAgentEpisode], num_shards: int, required: Collection[str]
) -> list[list[MultiAgentEpisode]]:
    """Split games over `num_shards` learners without cutting any.

    Games are placed longest first on the shard that lacks most of their
    `required` modules, then on the shortest shard. A required module that still
    misses a shard (it played fewer games than there are shards) gets one of its
    games copied there, so every shard trains every required module present.
    """
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    modules = [set(episode_module_steps(e)) & set(required) for e in episodes]
    rarity = Counter(m for ms in modules for m in ms)
    # Games of rare modules first, so their few games spread before shards fill up.
    order = sorted(
        range(len(episodes)),
        key=lambda i: (
            min((rarity[m] for m in modules[i]), default=len(episodes)),
            -len(episodes[i]),
        ),
    )
    shards: list[list[MultiAgentEpisode]] = [[] for _ in range(num_shards)]
    lengths = [0] * num_shards
    held: list[set[str]] = [set() for _ in range(num_shards)]
    for i in order:
        k = min(range(num_shards), key=lambda s: (-len(modules[i] - held[s]), lengths[s], s))
        shards[k].append(episodes[i])
        lengths[k] += len(episodes[i])
        held[k] |= modules[i]
    for module in rarity:
        donor = next(episodes[i] for i in order if module in modules[i])
        for k in range(num_shards):
            if module not in held[k]:
                shards[k].append(donor)
                held[k] |= set(episode_module_steps(donor)) & set(required)
    return shards


def module_minibatches(
    episodes: Sequence[MultiAgentEpisode], num_shards: int, minibatch_size: int
) -> dict[str, int]:
    """Minibatches per epoch for each module, the same on every learner: the
    module's rows over all learners divided by `num_shards * minibatch_size`
    (at least 1), so the learners together take PPO's usual steps."""
    steps: Counter[str] = Counter()
    for episode in episodes:
        steps.update(episode_module_steps(episode))
    return {m: max(1, round(n / (num_shards * minibatch_size))) for m, n in steps.items()}


@dataclasses.dataclass
class WholeGameTrainingData(TrainingData):
    """Training data whose episodes shard as whole games (see the module doc);
    every shard holds each of `required_modules` that played in the batch."""

    required_modules: frozenset[str] = frozenset()
    per_module_minibatches: bool = True
    """Tell each learner the per-player minibatch counts (PPO's `PerModuleEpochIterator`;
    APPO takes each shard as one batch)."""

    def shard(
        self, num_shards: int, len_lookback_buffer: int | None = None, **kwargs: Any
    ) -> list[tuple[TrainingData, dict[str, Any]]]:
        if self.episodes is None or num_shards < 2:
            return super().shard(num_shards, len_lookback_buffer, **kwargs)
        shards = shard_whole_games(self.episodes, num_shards, self.required_modules)
        minibatch_size = kwargs.get("minibatch_size") or max(1, sum(map(len, self.episodes)))
        counts = module_minibatches(self.episodes, num_shards, minibatch_size)
        # A learner cannot cut more minibatches from a module than it holds rows.
        for shard in shards:
            rows: Counter[str] = Counter()
            for episode in shard:
                rows.update(episode_module_steps(episode))
            for module, n in rows.items():
                counts[module] = min(counts[module], n)
        extra = {MODULE_MINIBATCHES: counts} if self.per_module_minibatches else {}
        return [(TrainingData(episodes=shard), dict(extra)) for shard in shards]


class WholeGameLearnerGroup(LearnerGroup):
    """A LearnerGroup that shards episode updates as whole games over 2+ learners."""

    def required_modules(self) -> frozenset[str]:
        """The modules every learner must update in every step: those trained."""
        trained = self.config.policies_to_train
        # A callable policies_to_train cannot be listed: require every module.
        if trained is None or callable(trained):
            return frozenset(self.config.policies)
        return frozenset(trained)

    def update(self, *, episodes: list | None = None, **kwargs: Any) -> Any:
        if episodes is not None and not self.is_local and len(self) > 1:
            data = WholeGameTrainingData(
                episodes=episodes, required_modules=self.required_modules()
            )
            return super().update(training_data=data, **kwargs)
        return super().update(episodes=episodes, **kwargs)


class WholeGameAPPOLearnerGroup(WholeGameLearnerGroup):
    """APPO's learner group over 2+ learners: whole games per learner, every learner
    given every batch in step, weight writes between steps (see the module doc)."""

    def update(
        self,
        *,
        training_data: TrainingData | None = None,
        async_update: bool = False,
        **kwargs: Any,
    ) -> Any:
        if training_data is None or self.is_local or len(self) < 2:
            return super().update(training_data=training_data, async_update=async_update, **kwargs)
        kwargs.pop("defer_solve_refs_to_learner", None)  # resolved here, to shard games
        training_data.solve_refs()
        if training_data.episodes is None:
            raise ValueError("data-parallel APPO learners train from episodes, got batches")
        data = WholeGameTrainingData(
            episodes=training_data.episodes,
            required_modules=self.required_modules(),
            per_module_minibatches=False,
        )
        return LearnerGroup.update(self, training_data=data, async_update=False, **kwargs)

    def set_state(self, state: dict[str, Any]) -> None:
        if not self.is_local and len(self) > 1:
            self.foreach_learner(lambda learner: learner.wait_for_queued_updates())
        super().set_state(state)


class _WholeGameLearners:
    """Config mixin: the learner group shards whole games (`group_class`)."""

    group_class: type[LearnerGroup] = WholeGameLearnerGroup

    def build_learner_group(
        self,
        *,
        env: Any = None,
        spaces: Any = None,
        rl_module_spec: Any = None,
        placement_group: Any = None,
    ) -> LearnerGroup:
        if rl_module_spec is None:
            rl_module_spec = self.get_multi_rl_module_spec(env=env, spaces=spaces)
        return self.group_class(
            config=self.copy(), module_spec=rl_module_spec, placement_group=placement_group
        )


class DataParallelPPOConfig(_WholeGameLearners, PPOConfig):
    """PPOConfig whose learner group shards whole games (`WholeGameLearnerGroup`)."""


class DataParallelAPPOConfig(_WholeGameLearners, APPOConfig):
    """APPOConfig whose learner group shards whole games in step (`WholeGameAPPOLearnerGroup`)."""

    group_class = WholeGameAPPOLearnerGroup
