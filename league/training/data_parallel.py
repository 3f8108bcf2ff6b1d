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
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

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
        return [(TrainingData(episodes=shard), {MODULE_MINIBATCHES: counts}) for shard in shards]


class WholeGameLearnerGroup(LearnerGroup):
    """A LearnerGroup that shards episode updates as whole games over 2+ learners."""

    def update(self, *, episodes: list | None = None, **kwargs: Any) -> Any:
        if episodes is not None and not self.is_local and len(self) > 1:
            trained = self.config.policies_to_train
            # A callable policies_to_train cannot be listed: require every module.
            required = (
                frozenset(self.config.policies)
                if trained is None or callable(trained)
                else frozenset(trained)
            )
            data = WholeGameTrainingData(episodes=episodes, required_modules=required)
            return super().update(training_data=data, **kwargs)
        return super().update(episodes=episodes, **kwargs)


class DataParallelPPOConfig(PPOConfig):
    """PPOConfig whose learner group shards whole games (`WholeGameLearnerGroup`)."""

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
        return WholeGameLearnerGroup(
            config=self.copy(), module_spec=rl_module_spec, placement_group=placement_group
        )
