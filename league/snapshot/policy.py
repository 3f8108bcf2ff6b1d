"""SnapshotPolicy: a frozen player rebuilt with plain torch, no Ray needed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from envs.opponents import choose_action
from league.snapshot.format import (
    POLICY_PREFIX,
    SnapshotError,
    SnapshotMetadata,
    _check_model_config,
    _parse_space,
)
from rlmodules.networks import build_mlp, mask_logits


class SnapshotPolicy:
    """A frozen player: observation dict -> action probabilities or an action.

    Observations are one PettingZoo observation dict, `{"observation", "action_mask"}`.
    """

    def __init__(
        self,
        meta: SnapshotMetadata,
        weights: Mapping[str, Any],
        source: str = "policy state",
    ):
        self.meta = meta
        obs_space = _parse_space(meta.observation_space, source, "observation space")
        if not isinstance(obs_space, gym.spaces.Dict) or set(obs_space.spaces) != {
            "observation",
            "action_mask",
        }:
            raise SnapshotError(
                f"{source}: observation space must be a Dict of observation and action_mask"
            )
        self.observation_space = obs_space
        self.obs_shape = tuple(obs_space["observation"].shape)
        self.n_actions = int(np.prod(obs_space["action_mask"].shape))
        hidden, activation = _check_model_config(meta.model_config, source)
        self.net = build_mlp(int(np.prod(self.obs_shape)), hidden, self.n_actions, activation)
        _load_weights(self.net, weights, meta.model_config, source)
        self.net.eval()

    def logits_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Masked logits (illegal actions at FLOAT_MIN), as RLlib's forward gives them."""
        with torch.no_grad():
            return self._masked_logits(observations, masks).numpy()

    def action_probs_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            logits = self._masked_logits(observations, masks)
            return torch.softmax(logits, dim=-1).double().numpy()

    def _masked_logits(self, observations: np.ndarray, masks: np.ndarray) -> torch.Tensor:
        obs = torch.as_tensor(np.asarray(observations), dtype=torch.float32)
        logits = self.net(obs.reshape(obs.shape[0], -1))
        return mask_logits(logits, torch.as_tensor(np.asarray(masks)))

    def action_probs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        return self.action_probs_batch(obs["observation"][None], obs["action_mask"][None])[0]

    def act(
        self,
        obs: Mapping[str, np.ndarray],
        greedy: bool = True,
        rng: np.random.Generator | None = None,
    ) -> int:
        """The argmax action, or one sampled with ``rng`` (fresh if None)."""
        return choose_action(self.action_probs(obs), rng, greedy)


def _load_weights(
    net: torch.nn.Module, weights: Mapping[str, Any], config: Mapping[str, Any], source: str
) -> None:
    """Load `policy_net.*` tensors into `net`, naming every tensor that does not fit."""
    expected = {POLICY_PREFIX + k: tuple(v.shape) for k, v in net.state_dict().items()}
    shapes = {k: tuple(v.shape) for k, v in weights.items()}
    problems = [f"missing {k}" for k in sorted(expected.keys() - shapes.keys())]
    problems += [f"unexpected {k}" for k in sorted(shapes.keys() - expected.keys())]
    problems += [
        f"{k} is {list(shapes[k])}, the model needs {list(expected[k])}"
        for k in sorted(expected.keys() & shapes.keys())
        if shapes[k] != expected[k]
    ]
    if problems:
        raise SnapshotError(
            f"{source}: weights do not fit model_config {dict(config)}: " + "; ".join(problems)
        )
    state = {
        k.removeprefix(POLICY_PREFIX): torch.as_tensor(_to_numpy(v), dtype=torch.float32)
        for k, v in weights.items()
    }
    net.load_state_dict(state, strict=True)


def _to_numpy(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)
