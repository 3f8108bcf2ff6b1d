"""Masked actor-critic RLModule for turn-based games with action masks.

Observations are PettingZoo's `{"observation": planes, "action_mask": mask}` dicts.
The planes go to an MLP (flattened) or, for H x W x C boards, to conv layers then
an MLP (`rlmodules.networks.build_policy_network`); illegal actions get the logit
`FLOAT_MIN`, so a softmax gives them probability exactly 0 in exploration,
inference and training alike.

The value network is separate from the policy network and listed as a
non-inference attribute: env runners build the module with `inference_only=True`
and carry the policy only, and weight syncs to them strip the value net. With
`model_config["value_head"] = False` the module has no value network at all: the
values then come from the learner-only shared value function
(rlmodules.shared_value), so a per-policy head would be dead weight.

For APPO the module also implements `TargetNetworkAPI`: APPO's learner calls
`make_target_networks` after building it and keeps a slowly updated copy of the
policy network (`target_policy_net`) for its clipped importance ratios. The copy
exists on learners only (a non-inference attribute, never synced to runners) and
PPO never creates it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.apis import (
    TARGET_NETWORK_ACTION_DIST_INPUTS,
    InferenceOnlyAPI,
    TargetNetworkAPI,
    ValueFunctionAPI,
)
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.core.rl_module.torch import TorchRLModule

from envs.spaces import MASK_KEY, OBS_KEY
from rlmodules.network_options import default_model_config
from rlmodules.networks import build_policy_network, mask_logits

DEFAULT_MODEL_CONFIG: dict[str, Any] = default_model_config()
TARGET_POLICY_NET = "target_policy_net"


def masked_obs_shape(observation_space: gym.Space) -> tuple[int, int]:
    """(flat observation size, number of actions) of a masked dict observation space."""
    if not isinstance(observation_space, gym.spaces.Dict) or set(observation_space.spaces) != {
        OBS_KEY,
        MASK_KEY,
    }:
        raise ValueError(
            f"MaskedActorCriticModule needs a Dict observation space with keys "
            f"{OBS_KEY!r} and {MASK_KEY!r}, got {observation_space}"
        )
    obs_size = int(np.prod(observation_space[OBS_KEY].shape))
    n_actions = int(np.prod(observation_space[MASK_KEY].shape))
    return obs_size, n_actions


class MaskedActorCriticModule(TorchRLModule, ValueFunctionAPI, InferenceOnlyAPI, TargetNetworkAPI):
    """Policy and value networks over the observation, with action masking.

    `model_config` keys: `hidden_sizes` (list of ints), `activation` (relu, tanh,
    elu, silu), `encoder` (auto, mlp, conv) and `conv_filters` (RLlib's
    [out_channels, kernel, stride] list). Missing keys take `DEFAULT_MODEL_CONFIG`. Optional `value_head`
    (default True): False builds the policy network only, for training with the
    learner-only shared value function; `compute_values` then refuses.
    """

    def setup(self) -> None:
        config = {**DEFAULT_MODEL_CONFIG, **(self.model_config or {})}
        _, n_actions = masked_obs_shape(self.observation_space)
        if getattr(self.action_space, "n", None) != n_actions:
            raise ValueError(
                f"action space {self.action_space} does not match the action mask size {n_actions}"
            )
        obs_shape = tuple(self.observation_space[OBS_KEY].shape)
        self.policy_net = build_policy_network(obs_shape, n_actions, config)
        self.has_value_head = bool(config.get("value_head", True))
        if self.has_value_head and not self.inference_only:
            self.value_net = build_policy_network(obs_shape, 1, config)

    def get_non_inference_attributes(self) -> list[str]:
        return (["value_net"] if self.has_value_head else []) + [TARGET_POLICY_NET]

    def _forward(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        logits = self.policy_net(batch[Columns.OBS][OBS_KEY])
        return {Columns.ACTION_DIST_INPUTS: mask_logits(logits, batch[Columns.OBS][MASK_KEY])}

    # TargetNetworkAPI (APPO's learner only)
    def make_target_networks(self) -> None:
        self.target_policy_net = make_target_network(self.policy_net)

    def get_target_network_pairs(self) -> list[tuple[torch.nn.Module, torch.nn.Module]]:
        return [(self.policy_net, self.target_policy_net)]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        logits = self.target_policy_net(batch[Columns.OBS][OBS_KEY])
        return {
            TARGET_NETWORK_ACTION_DIST_INPUTS: mask_logits(logits, batch[Columns.OBS][MASK_KEY])
        }

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if not self.has_value_head:
            raise RuntimeError(
                "this MaskedActorCriticModule has no value head (model_config "
                "value_head=False); its values come from the shared value function"
            )
        return self.value_net(batch[Columns.OBS][OBS_KEY]).squeeze(-1)


def masked_policy_spec(
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
    model_config: dict[str, Any] | None = None,
    inference_only: bool = False,
) -> RLModuleSpec:
    """RLModuleSpec of a MaskedActorCriticModule (spaces may be left to RLlib)."""
    return RLModuleSpec(
        module_class=MaskedActorCriticModule,
        observation_space=observation_space,
        action_space=action_space,
        model_config={**DEFAULT_MODEL_CONFIG, **(model_config or {})},
        inference_only=inference_only,
    )
