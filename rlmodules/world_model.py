"""Learner-only self-supervised world model of the trainable players' experience.

From an agent's observation and action it predicts that agent's NEXT observation
(the board at its next turn, so the opponent's reply included), the reward it
gets and whether the game ends. It trains on the trainable players' transitions
with its own loss (`SelfSupervisedLossAPI`) and its own optimizer, and is never
built on env runners (`learner_only`) or sent to them.

Its one use here is ICM-style curiosity: the per-transition next-observation
prediction error, times `curiosity_coeff`, is added to the rewards before
advantage estimation (`rlmodules.learner_only_learner.CuriosityReward`), so a
player is drawn to positions and replies it cannot yet predict. Coefficient 0
keeps the model training (its losses stay a diagnostic of how predictable play
is) without touching the rewards.

Observation loss: binary planes (all games here) use per-plane sigmoid
cross-entropy, other boxes a squared error. The reward is regressed, the
terminal flag classified.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, SelfSupervisedLossAPI
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.typing import ModuleID

from rlmodules.masked_policy import OBS_KEY, masked_obs_shape
from rlmodules.network_options import default_model_config
from rlmodules.networks import build_mlp

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
    from ray.rllib.core.learner.learner import Learner

WORLD_MODEL_ID = "world_model"
EXTRINSIC_REWARDS = "extrinsic_rewards"
"""Batch column: the env's rewards, kept aside when curiosity changes REWARDS."""

NEXT_OBS_ERROR = "next_obs_error"
"""forward_train output: per-transition next-observation loss (the curiosity signal)."""

DEFAULT_WORLD_MODEL_CONFIG: dict[str, Any] = {
    **default_model_config(),
    "obs_loss_weight": 1.0,
    "reward_loss_weight": 1.0,
    "terminal_loss_weight": 1.0,
}


def _is_binary_box(space: gym.Space) -> bool:
    return (
        isinstance(space, gym.spaces.Box)
        and np.all(space.low == 0)
        and np.all(space.high == 1)
        and np.issubdtype(space.dtype, np.integer)
    )


def _masked_mean(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return values.mean()
    mask = mask.bool()
    return values[mask].sum() / mask.sum().clamp(min=1)


class WorldModelModule(TorchRLModule, SelfSupervisedLossAPI, InferenceOnlyAPI):
    """(observation, action) -> (next observation, reward, terminal), on learners only.

    `forward_train` needs OBS, ACTIONS and NEXT_OBS; the loss also reads REWARDS
    (or EXTRINSIC_REWARDS when present), TERMINATEDS and LOSS_MASK.
    """

    def setup(self) -> None:
        config = {**DEFAULT_WORLD_MODEL_CONFIG, **(self.model_config or {})}
        self.obs_size, self.n_actions = masked_obs_shape(self.observation_space)
        self.binary_obs = _is_binary_box(self.observation_space[OBS_KEY])
        self.loss_weights = {
            "obs": float(config["obs_loss_weight"]),
            "reward": float(config["reward_loss_weight"]),
            "terminal": float(config["terminal_loss_weight"]),
        }
        # One trunk, three heads packed in the output: next planes, reward, terminal.
        self.net = build_mlp(
            self.obs_size + self.n_actions,
            list(config["hidden_sizes"]),
            self.obs_size + 2,
            config["activation"],
        )

    def get_non_inference_attributes(self) -> list[str]:
        # All of it: an inference-only state (what env runners get) is empty.
        return ["net"]

    def _flat(self, obs: dict[str, Any]) -> torch.Tensor:
        planes = obs[OBS_KEY]
        return planes.reshape(planes.shape[0], -1).float()

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = self._flat(batch[Columns.OBS])
        actions = F.one_hot(batch[Columns.ACTIONS].long(), self.n_actions).float()
        out = self.net(torch.cat([obs, actions], dim=-1))
        next_obs_pred = out[:, : self.obs_size]
        next_obs = self._flat(batch[Columns.NEXT_OBS])
        if self.binary_obs:
            error = F.binary_cross_entropy_with_logits(next_obs_pred, next_obs, reduction="none")
        else:
            error = (next_obs_pred - next_obs).pow(2)
        return {
            "next_obs_pred": next_obs_pred,
            "reward_pred": out[:, self.obs_size],
            "terminal_logit": out[:, self.obs_size + 1],
            NEXT_OBS_ERROR: error.mean(dim=-1),
        }

    def compute_self_supervised_loss(
        self,
        *,
        learner: Learner,
        module_id: ModuleID,
        config: AlgorithmConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        mask = batch.get(Columns.LOSS_MASK)
        rewards = batch.get(EXTRINSIC_REWARDS, batch[Columns.REWARDS]).float()
        terminals = batch[Columns.TERMINATEDS].float()
        obs_loss = _masked_mean(fwd_out[NEXT_OBS_ERROR], mask)
        reward_loss = _masked_mean((fwd_out["reward_pred"] - rewards).pow(2), mask)
        terminal_loss = _masked_mean(
            F.binary_cross_entropy_with_logits(
                fwd_out["terminal_logit"], terminals, reduction="none"
            ),
            mask,
        )
        w = self.loss_weights
        total = w["obs"] * obs_loss + w["reward"] * reward_loss + w["terminal"] * terminal_loss
        learner.metrics.log_dict(
            {
                "world_model_loss": total,
                "next_obs_loss": obs_loss,
                "reward_loss": reward_loss,
                "terminal_loss": terminal_loss,
            },
            key=module_id,
            window=1,
        )
        return total

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError("WorldModelModule is learner-only: use forward_train")


def world_model_spec(
    observation_space: gym.Space,
    action_space: gym.Space,
    model_config: dict[str, Any] | None = None,
) -> RLModuleSpec:
    """learner_only spec of the world model (explicit spaces: no agent maps to it)."""
    return RLModuleSpec(
        module_class=WorldModelModule,
        observation_space=observation_space,
        action_space=action_space,
        model_config={**DEFAULT_WORLD_MODEL_CONFIG, **(model_config or {})},
        learner_only=True,
    )
