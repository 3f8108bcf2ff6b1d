"""Learner-only shared value function: one critic gives the values of every trainable player.

Why: each trainable player's own value head sees only that player's data and
lives in every env-runner copy of the module although acting never needs it.
One shared critic pools all trainable players' experience of the game (states
seen by the main player inform the exploiters' values and back), and being
`learner_only` it is never built on env runners nor shipped in weight syncs.

Inputs: the acting agent's observation planes (flattened), or -- with
`centralized=True`, for simultaneous-move (Parallel) games -- the observation
planes of the seats its `critic_groups` entry lists, the acting seat's first: every
seat in a game of single-seat teams (MAPPO-style centralized critic), the seat's
team in a team game (the team's critic: it sees every teammate's observation).
A group shorter than the widest, or a teammate out of the game (dead in battle),
reads zeros. `rlmodules.learner_only_learner.AddGlobalObservations` puts the planes
in the train batch under `GLOBAL_OBS`. A one-hot of the trainable
player id is appended, because players follow different policies and so have
different values of the same state: the critic estimates V^{pi_i}(s) for player i.

The module implements no RLlib value API on purpose: PPO's stock GAE would call
it per module with the wrong batch. `rlmodules.learner_only_learner.SharedValueGAE`
calls `player_values` for each trainable player instead, and the learner trains
it with the clipped squared error against the GAE value targets.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.core.rl_module.torch import TorchRLModule

from rlmodules.masked_policy import OBS_KEY, masked_obs_shape
from rlmodules.network_options import default_model_config
from rlmodules.networks import build_mlp

SHARED_VF_ID = "shared_vf"
GLOBAL_OBS = "global_obs"
"""Batch column: every seat's flattened observation planes, own seat first."""
VALUE_INPUTS = "value_inputs"
PLAYER_INDEX = "player_index"
"""Columns of the critic's own batch (`SharedValueModule.player_batch`)."""

DEFAULT_SHARED_VF_CONFIG: dict[str, Any] = {
    **default_model_config(),
    "players": [],
    "centralized": False,
    "seats": [],
    "critic_groups": {},
}


class SharedValueModule(TorchRLModule, InferenceOnlyAPI):
    """V(observation[s], player) for all trainable players, on learners only.

    `model_config` keys: `hidden_sizes`, `activation`, `players` (trainable player
    ids; their order fixes the one-hot), `centralized` (read `GLOBAL_OBS` instead
    of the agent's own planes) and `seats` (the game's agent ids, whose planes
    `GLOBAL_OBS` holds; needed when centralized).
    """

    def setup(self) -> None:
        config = {**DEFAULT_SHARED_VF_CONFIG, **(self.model_config or {})}
        obs_size, _ = masked_obs_shape(self.observation_space)
        self.players: list[str] = list(config["players"])
        if not self.players:
            raise ValueError("SharedValueModule needs model_config['players'] (trainable ids)")
        self.centralized = bool(config["centralized"])
        self.seats: list[str] = list(config["seats"])
        if self.centralized and not self.seats:
            raise ValueError("a centralized SharedValueModule needs model_config['seats']")
        self.critic_groups: dict[str, list[str]] = {
            seat: list(group) for seat, group in dict(config["critic_groups"]).items()
        } or {seat: [seat, *(s for s in self.seats if s != seat)] for seat in self.seats}
        self.critic_width = max((len(g) for g in self.critic_groups.values()), default=1)
        self.obs_size = obs_size * (self.critic_width if self.centralized else 1)
        in_size = self.obs_size + len(self.players)
        self.value_net = build_mlp(in_size, list(config["hidden_sizes"]), 1, config["activation"])

    def get_non_inference_attributes(self) -> list[str]:
        # Everything is non-inference: even a plain learner's inference-only sync
        # (the one PPO sends to env runners) carries nothing of this module.
        return ["value_net"]

    def player_index(self, player: str) -> int:
        try:
            return self.players.index(player)
        except ValueError:
            raise KeyError(
                f"{player!r} is not a trainable player of the shared value function "
                f"({self.players})"
            ) from None

    def value_inputs(self, batch: dict[str, Any]) -> torch.Tensor:
        """The critic's state input: own planes, or all seats' planes if centralized."""
        if self.centralized:
            if GLOBAL_OBS not in batch:
                raise KeyError(
                    f"centralized shared value function needs the {GLOBAL_OBS!r} column "
                    "(AddGlobalObservations learner connector)"
                )
            obs = batch[GLOBAL_OBS]
        else:
            obs = batch[Columns.OBS][OBS_KEY]
        return obs.reshape(obs.shape[0], -1).float()

    def player_batch(self, batch: dict[str, Any], player: str) -> dict[str, torch.Tensor]:
        """The critic's own batch for one trainable player's rows: state and player index."""
        state = self.value_inputs(batch)
        index = torch.full(
            (state.shape[0],), self.player_index(player), dtype=torch.long, device=state.device
        )
        return {VALUE_INPUTS: state, PLAYER_INDEX: index}

    def player_values(self, batch: dict[str, Any], player: str) -> torch.Tensor:
        """Values (shape [B]) of one trainable player's batch rows."""
        return self.forward_train(self.player_batch(batch, player))[Columns.VF_PREDS]

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        # Takes `player_batch` output (possibly several players' concatenated), so
        # learners call it through `forward_train` like any module (a DDP wrapper
        # then sees the forward pass).
        one_hot = F.one_hot(batch[PLAYER_INDEX], len(self.players)).float()
        values = self.value_net(torch.cat([batch[VALUE_INPUTS], one_hot], dim=-1))
        return {Columns.VF_PREDS: values.squeeze(-1)}

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError(
            "SharedValueModule is learner-only: use player_values(batch, player)"
        )


def shared_value_spec(
    observation_space: gym.Space,
    action_space: gym.Space,
    players: list[str],
    model_config: dict[str, Any] | None = None,
    *,
    centralized: bool = False,
    seats: list[str] | None = None,
    critic_groups: dict[str, list[str]] | None = None,
) -> RLModuleSpec:
    """learner_only spec of the shared value function (explicit spaces: no agent maps to it)."""
    return RLModuleSpec(
        module_class=SharedValueModule,
        observation_space=observation_space,
        action_space=action_space,
        model_config={
            **DEFAULT_SHARED_VF_CONFIG,
            **(model_config or {}),
            "players": list(players),
            "centralized": centralized,
            "seats": list(seats or []),
            "critic_groups": {k: list(v) for k, v in (critic_groups or {}).items()},
        },
        learner_only=True,
    )
