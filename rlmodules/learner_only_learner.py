"""PPO and APPO learners that also train the learner-only shared value function and world model.

What changes against `rlmodules.league_learner.LeaguePPOLearner` /
`LeagueAPPOLearner` (whose frozen opponent filtering they keep), only for the
learner-only modules present in the learner's MultiRLModule (`shared_vf`,
`world_model`):

Learner connector pipeline (runs once per train batch, before minibatching):

    AddOneTsToEpisodesAndTruncate
    AddObservationsFromEpisodesToBatch
    [AddNextObservationsFromEpisodesToTrainBatch]   world model: NEXT_OBS column
    [AddGlobalObservations]                         centralized critic: all seats' planes
    ... AgentToModuleMapping, DropUntrainedModules, BatchIndividualItems, NumpyToTensor
    [CuriosityReward]                               world model + curiosity_coeff > 0
    SharedValueGAE  (PPO: replaces GeneralAdvantageEstimation when shared_vf is present)

APPO has no advantage step in the pipeline: its V-trace runs inside the loss on
each policy's own value head, so the shared value function has no way in and
APPO refuses it (league.training.algorithm); the world model and curiosity work
the same for both (curiosity changes REWARDS before PPO's GAE or APPO's loss).

Losses (per minibatch): the policies' PPO (or APPO) losses as usual (PPO with
`use_critic=False` when the shared value function is on, since the policies then
carry no value head), plus the shared value function's clipped value loss and the world model's
self-supervised loss, computed on the concatenation of all trainable players'
rows of the SAME minibatch. Doing it from the policies' minibatches instead of
giving the learner-only modules batch entries of their own keeps PPO's epoch
count: RLlib's minibatch iterator cycles every module's batch until each has seen
`num_epochs` epochs, so a union batch would give every policy extra epochs.
Each learner-only module has its own optimizer (RLlib registers one per module);
their losses and metrics are logged under their module ids.

Weight syncs to env runners ask for `inference_only=True` state; these learners
leave learner-only modules out of it (they also declare all their parameters
non-inference, so even a plain learner would send them empty).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import tree
from ray.rllib.algorithms.ppo.ppo import (
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY,
)
from ray.rllib.connectors.common.add_observations_from_episodes_to_batch import (
    AddObservationsFromEpisodesToBatch,
)
from ray.rllib.connectors.common.numpy_to_tensor import NumpyToTensor
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.connectors.learner import GeneralAdvantageEstimation
from ray.rllib.connectors.learner.add_next_observations_from_episodes_to_train_batch import (
    AddNextObservationsFromEpisodesToTrainBatch,
)
from ray.rllib.core import COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import VF_LOSS_KEY, Learner
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets
from ray.rllib.utils.postprocessing.zero_padding import unpad_data_if_necessary
from ray.rllib.utils.torch_utils import explained_variance

from rlmodules.league_learner import LeagueAPPOLearner, LeaguePPOLearner
from rlmodules.masked_policy import OBS_KEY
from rlmodules.shared_value import GLOBAL_OBS, PLAYER_INDEX, SHARED_VF_ID
from rlmodules.world_model import EXTRINSIC_REWARDS, NEXT_OBS_ERROR, WORLD_MODEL_ID

LEARNER_ONLY_IDS = (SHARED_VF_ID, WORLD_MODEL_ID)
CURIOSITY_COEFF_KEY = "curiosity_coeff"
"""`config.learner_config_dict` key: intrinsic reward coefficient (0 = off)."""


def _flat_planes(obs_items: Any, n: int) -> np.ndarray:
    """[n, D] float32 observation planes from an episode's observations (list or batched)."""
    if isinstance(obs_items, dict):
        planes = np.asarray(obs_items[OBS_KEY])
    else:
        planes = np.stack([np.asarray(o[OBS_KEY]) for o in obs_items])
    return planes.reshape(n, -1).astype(np.float32)


class AddGlobalObservations(ConnectorV2):
    """Adds `GLOBAL_OBS`: the observation planes of a seat's critic group at the same
    step, own seat first (every seat, or the seat's team: `SharedValueModule`).

    For the centralized (MAPPO-style) shared value function of simultaneous-move
    games, where every agent acts at every env step from the first, so the agents'
    per-step observations line up. A seat that left the game (dead in battle) reads
    zeros after its last step, and a group narrower than `width` is padded with
    zeros. Turn-based games are refused (agents' steps differ). Reads the episodes,
    so frozen opponents' observations are included too.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        seats: list[str],
        groups: dict[str, list[str]] | None = None,
    ) -> None:
        super().__init__(input_observation_space, input_action_space)
        self.seats = list(seats)
        self.groups = {seat: list(group) for seat, group in (groups or {}).items()} or {
            seat: [seat, *(s for s in self.seats if s != seat)] for seat in self.seats
        }
        self.width = max(len(g) for g in self.groups.values())

    def __call__(
        self, *, rl_module: Any, batch: dict[str, Any], episodes: list[Any], **kwargs: Any
    ) -> Any:
        by_id = {episode.id_: episode for episode in episodes}
        for sa_episode in self.single_agent_episode_iterator(
            episodes, agents_that_stepped_only=False
        ):
            ma_episode = by_id[sa_episode.multi_agent_episode_id]
            n = len(sa_episode)
            own = _flat_planes(sa_episode.get_observations(slice(0, n)), n)
            parts = [own]
            for seat in self.groups[sa_episode.agent_id][1:]:
                seat_episode = ma_episode.agent_episodes.get(seat)
                steps = 0 if seat_episode is None else min(len(seat_episode), n)
                planes = np.zeros_like(own)
                if steps:
                    observed = seat_episode.get_observations(slice(0, steps))
                    planes[:steps] = _flat_planes(observed, steps)
                parts.append(planes)
            parts += [np.zeros_like(own)] * (self.width - len(parts))
            self.add_n_batch_items(
                batch,
                GLOBAL_OBS,
                items_to_add=np.concatenate(parts, axis=-1),
                num_items=n,
                single_agent_episode=sa_episode,
            )
        return batch


class CuriosityReward(ConnectorV2):
    """ICM-style curiosity: adds coeff x (world model's next-observation error) to rewards.

    Runs on the tensor batch before advantage estimation. The env's rewards are
    kept in `EXTRINSIC_REWARDS` so the world model keeps learning the real reward.
    The bootstrap timestep PPO appends to each episode chunk gets no bonus.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        coeff: float,
    ) -> None:
        super().__init__(input_observation_space, input_action_space)
        self.coeff = float(coeff)

    def __call__(
        self, *, rl_module: Any, batch: dict[str, Any], metrics: Any = None, **kwargs: Any
    ) -> Any:
        world_model = rl_module[WORLD_MODEL_ID]
        bonuses = []
        for module_id, module_batch in batch.items():
            if module_id in LEARNER_ONLY_IDS:
                continue
            with torch.no_grad():
                error = world_model.forward_train(module_batch)[NEXT_OBS_ERROR]
            if Columns.LOSS_MASK in module_batch:
                error = error * module_batch[Columns.LOSS_MASK].float()
            rewards = module_batch[Columns.REWARDS]
            module_batch[EXTRINSIC_REWARDS] = rewards
            module_batch[Columns.REWARDS] = rewards + self.coeff * error.to(rewards.dtype)
            bonuses.append(self.coeff * error)
        if metrics is not None and bonuses:
            metrics.log_value(
                (WORLD_MODEL_ID, "intrinsic_reward_mean"),
                float(torch.cat(bonuses).mean()),
                window=1,
            )
        return batch


class SharedValueGAE(ConnectorV2):
    """GAE with values from the shared value function instead of each policy's head.

    Same computation as RLlib's `GeneralAdvantageEstimation` (value targets from
    rewards, terminateds, truncateds and the bootstrap timestep; advantages =
    targets - values, standardized per module), but the value of player i's
    rows is `shared_vf.player_values(rows, i)`.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        gamma: float,
        lambda_: float,
    ) -> None:
        super().__init__(input_observation_space, input_action_space)
        self.gamma = gamma
        self.lambda_ = lambda_

    def __call__(
        self, *, rl_module: Any, episodes: list[Any], batch: dict[str, Any], **kwargs: Any
    ) -> Any:
        shared_vf = rl_module[SHARED_VF_ID].unwrapped()
        device = next(shared_vf.parameters()).device
        sa_episodes = list(
            self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False)
        )
        for module_id, module_batch in batch.items():
            if module_id in LEARNER_ONLY_IDS:
                continue
            if rl_module[module_id].is_stateful():
                raise NotImplementedError("SharedValueGAE does not support stateful modules")
            with torch.no_grad():
                values = convert_to_numpy(shared_vf.player_values(module_batch, module_id))
            episode_lens = [len(e) for e in sa_episodes if e.module_id in (None, module_id)]

            def unpad(column: str, lens: list[int] = episode_lens, mb: Any = module_batch) -> Any:
                return unpad_data_if_necessary(lens, convert_to_numpy(mb[column]))

            values = unpad_data_if_necessary(episode_lens, values)
            targets = compute_value_targets(
                values=values,
                rewards=unpad(Columns.REWARDS),
                terminateds=unpad(Columns.TERMINATEDS),
                truncateds=unpad(Columns.TRUNCATEDS),
                gamma=self.gamma,
                lambda_=self.lambda_,
            )
            advantages = targets - values
            advantages = (advantages - advantages.mean()) / max(1e-4, advantages.std())
            module_batch[Postprocessing.ADVANTAGES] = torch.as_tensor(
                np.asarray(advantages, np.float32), device=device
            )
            module_batch[Postprocessing.VALUE_TARGETS] = torch.as_tensor(
                np.asarray(targets, np.float32), device=device
            )
        return batch


def add_world_model_connectors(learner: Learner) -> None:
    """World model pieces of a built learner's pipeline: NEXT_OBS, and curiosity
    right after NumpyToTensor (it works on tensors; in PPO that is right before GAE)."""
    connector = learner._learner_connector
    connector.insert_after(
        AddObservationsFromEpisodesToBatch, AddNextObservationsFromEpisodesToTrainBatch()
    )
    coeff = float(learner.config.learner_config_dict.get(CURIOSITY_COEFF_KEY, 0.0))
    if coeff > 0:
        connector.insert_after(NumpyToTensor, CuriosityReward(coeff=coeff))


class LearnerOnlyModules:
    """Losses and state of the learner-only modules, for a PPO or APPO league learner.

    Mixed in before the algorithm's learner class, so `super()` is that learner.
    """

    @property
    def learner_only_ids(self) -> set[str]:
        """Learner-only modules held here (RLlib does not keep `learner_only` on modules)."""
        spec = self.config.rl_module_spec
        flagged = {mid for mid, s in getattr(spec, "rl_module_specs", {}).items() if s.learner_only}
        return (flagged | set(LEARNER_ONLY_IDS)) & set(self.module.keys())

    @override(Learner)
    def compute_losses(self, *, fwd_out: dict[str, Any], batch: dict[str, Any]) -> dict[str, Any]:
        losses = super().compute_losses(fwd_out=fwd_out, batch=batch)
        players = [mid for mid in fwd_out if mid not in LEARNER_ONLY_IDS]
        if not players:
            return losses
        if SHARED_VF_ID in self.module:
            losses[SHARED_VF_ID] = self.shared_value_loss(batch, players)
        if WORLD_MODEL_ID in self.module:
            losses[WORLD_MODEL_ID] = self.world_model_loss(batch, players)
        return losses

    def shared_value_loss(self, batch: dict[str, Any], players: list[str]) -> torch.Tensor:
        """PPO's clipped value loss of the shared critic over all players' rows.

        Also logs each player's `vf_loss` / `vf_explained_var` (the per-policy
        heads that PPO would report are gone; these are the shared critic's on
        that player's rows), and the pooled ones under `shared_vf`.
        """
        shared_vf = self.module[SHARED_VF_ID]
        config = self.config.get_config_for_module(SHARED_VF_ID)
        # One forward pass over all players' rows (each row tagged with its player).
        parts = [shared_vf.unwrapped().player_batch(batch[mid], mid) for mid in players]
        vf_batch = tree.map_structure(lambda *xs: torch.cat(xs), *parts)
        all_values = torch.split(
            shared_vf.forward_train(vf_batch)[Columns.VF_PREDS],
            [len(p[PLAYER_INDEX]) for p in parts],
        )
        kept_values, kept_targets = [], []
        for mid, values in zip(players, all_values, strict=True):
            mb = batch[mid]
            targets = mb[Postprocessing.VALUE_TARGETS]
            if Columns.LOSS_MASK in mb:
                mask = mb[Columns.LOSS_MASK].bool()
                values, targets = values[mask], targets[mask]
            sq = (values - targets).pow(2)
            clipped = torch.clamp(sq, 0, config.vf_clip_param)
            self.metrics.log_dict(
                {
                    VF_LOSS_KEY: clipped.mean(),
                    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: sq.mean(),
                    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained_variance(targets, values),
                },
                key=mid,
                window=1,
            )
            kept_values.append(values)
            kept_targets.append(targets)
        values, targets = torch.cat(kept_values), torch.cat(kept_targets)
        sq = (values - targets).pow(2)
        vf_loss = torch.clamp(sq, 0, config.vf_clip_param).mean()
        self.metrics.log_dict(
            {
                VF_LOSS_KEY: vf_loss,
                LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: sq.mean(),
                LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained_variance(targets, values),
            },
            key=SHARED_VF_ID,
            window=1,
        )
        return config.vf_loss_coeff * vf_loss

    def world_model_batch(self, batch: dict[str, Any], players: list[str]) -> dict[str, Any]:
        """All trainable players' transitions of this minibatch, concatenated."""
        columns = (
            Columns.OBS,
            Columns.NEXT_OBS,
            Columns.ACTIONS,
            Columns.REWARDS,
            Columns.TERMINATEDS,
            Columns.LOSS_MASK,
            EXTRINSIC_REWARDS,
        )
        wm_batch = {}
        for column in columns:
            parts = [batch[mid][column] for mid in players if column in batch[mid]]
            if len(parts) == len(players):
                wm_batch[column] = tree.map_structure(lambda *xs: torch.cat(xs), *parts)
        return wm_batch

    def world_model_loss(self, batch: dict[str, Any], players: list[str]) -> torch.Tensor:
        """The world model's own SelfSupervisedLossAPI loss on this minibatch's transitions."""
        world_model = self.module[WORLD_MODEL_ID]
        wm_batch = self.world_model_batch(batch, players)
        fwd_out = world_model.forward_train(wm_batch)
        return world_model.unwrapped().compute_self_supervised_loss(
            learner=self,
            module_id=WORLD_MODEL_ID,
            config=self.config.get_config_for_module(WORLD_MODEL_ID),
            batch=wm_batch,
            fwd_out=fwd_out,
        )

    @override(Learner)
    def get_state(
        self,
        components: str | Collection[str] | None = None,
        *,
        not_components: str | Collection[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """As RLlib's, but an inference-only state (a sync to env runners) has no
        learner-only modules: runners never build them, so they must not travel."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        if kwargs.get("inference_only") and COMPONENT_RL_MODULE in state:
            for module_id in self.learner_only_ids:
                state[COMPONENT_RL_MODULE].pop(module_id, None)
        return state


class LearnerOnlyPPOLearner(LearnerOnlyModules, LeaguePPOLearner):
    """LeaguePPOLearner plus the learner-only `shared_vf` and `world_model` modules."""

    @override(LeaguePPOLearner)
    def build(self) -> None:
        super().build()
        connector = self._learner_connector
        if connector is None or not self.config.add_default_connectors_to_learner_pipeline:
            return
        if SHARED_VF_ID in self.module:
            shared_vf = self.module[SHARED_VF_ID].unwrapped()
            connector.insert_after(
                GeneralAdvantageEstimation,
                SharedValueGAE(gamma=self.config.gamma, lambda_=self.config.lambda_),
            )
            connector.remove(GeneralAdvantageEstimation)
            if shared_vf.centralized:
                connector.insert_after(
                    AddObservationsFromEpisodesToBatch,
                    AddGlobalObservations(seats=shared_vf.seats, groups=shared_vf.critic_groups),
                )
        if WORLD_MODEL_ID in self.module:
            add_world_model_connectors(self)
        # CuriosityReward and SharedValueGAE work on tensors: NumpyToTensor must come
        # first. RLlib puts it right before GAE; fail loudly if that ever changes.
        names = [type(c).__name__ for c in connector.connectors]
        gae = SharedValueGAE if SHARED_VF_ID in self.module else GeneralAdvantageEstimation
        if names.index(NumpyToTensor.__name__) > names.index(gae.__name__):
            raise RuntimeError(f"unexpected learner connector order: {names}")


class LearnerOnlyAPPOLearner(LearnerOnlyModules, LeagueAPPOLearner):
    """LeagueAPPOLearner plus the learner-only `world_model` (no `shared_vf`: V-trace
    takes each policy's own values inside the loss)."""

    @override(LeagueAPPOLearner)
    def build(self) -> None:
        super().build()
        if SHARED_VF_ID in self.module:
            raise ValueError("APPO cannot train the shared value function (shared_vf)")
        connector = self._learner_connector
        if connector is None or not self.config.add_default_connectors_to_learner_pipeline:
            return
        if WORLD_MODEL_ID in self.module:
            add_world_model_connectors(self)
