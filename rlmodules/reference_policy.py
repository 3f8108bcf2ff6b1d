"""A reference opponent (a scripted `envs.opponents.Policy`) as an inference-only RLModule.

So minimax, the connect-four search player or a user's bot can sit in the league as
frozen members: env runners hold them beside snapshots and call them exactly like
any module (`forward_inference` / `forward_exploration` over a batch of league
observations). They have no parameters, never reach a learner, and their
"logits" are log-probabilities, so sampling from them plays the bot's own
distribution and greedy play takes its most likely move.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.core.rl_module.torch import TorchRLModule

from envs.opponents import BatchPolicy, Policy, make_opponent
from envs.spaces import MASK_KEY, OBS_KEY
from rlmodules.networks import mask_logits


class ReferencePolicyModule(TorchRLModule, InferenceOnlyAPI):
    """`model_config`: `opponent` (a game's opponent name or package.module:callable)
    and `game` (the game id the opponent is looked up for)."""

    def setup(self) -> None:
        opponent = self.model_config.get("opponent")
        game = self.model_config.get("game")
        if not isinstance(opponent, str) or not isinstance(game, str):
            raise ValueError("ReferencePolicyModule needs model_config 'opponent' and 'game'")
        self.policy = make_opponent(opponent, game)
        # Decided once: a protocol isinstance check per forward pass would sit on the
        # runners' per-step path.
        self._answers_batches = isinstance(self.policy, BatchPolicy)

    def get_non_inference_attributes(self) -> list[str]:
        return []

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        probs = batch_action_probs(self.policy, obs, batched=self._answers_batches)
        with np.errstate(divide="ignore"):
            logp = torch.from_numpy(np.log(probs).astype(np.float32))
        # Moves the bot gives probability 0 (and illegal ones) get the masked floor.
        return {Columns.ACTION_DIST_INPUTS: mask_logits(logp, obs[MASK_KEY] * (logp > -np.inf))}


def batch_action_probs(
    policy: Policy, obs: Mapping[str, torch.Tensor], *, batched: bool | None = None
) -> np.ndarray:
    """(N, A) move probabilities of a scripted ``policy`` over a batch of league
    observations (tensors); ``batched``: whether it answers whole batches (looked up
    when not given)."""
    boards = np.asarray(obs[OBS_KEY].cpu())
    masks = np.asarray(obs[MASK_KEY].cpu())
    if batched is None:
        batched = isinstance(policy, BatchPolicy)
    if batched:  # one call for the whole batch
        return np.asarray(policy.action_probs_batch({OBS_KEY: boards, MASK_KEY: masks}))
    return np.stack(
        [
            policy.action_probs({OBS_KEY: board, MASK_KEY: mask})
            for board, mask in zip(boards, masks, strict=True)
        ]
    )


def reference_policy_spec(
    opponent: str, game: str, observation_space: gym.Space, action_space: gym.Space
) -> RLModuleSpec:
    """Spec of reference opponent ``opponent`` for env runners (inference-only)."""
    return RLModuleSpec(
        module_class=ReferencePolicyModule,
        observation_space=observation_space,
        action_space=action_space,
        model_config={"opponent": opponent, "game": game},
        inference_only=True,
    )
