"""SnapshotPolicy: a frozen player rebuilt with plain torch, no Ray needed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from envs.opponents import choose_action
from envs.registry import UnknownGameError, game_layout, get_game
from envs.spaces import ObservationAdapter
from league.core.ids import side_of
from league.snapshot.format import (
    MAX_PARAMETERS,
    POLICY_PREFIX,
    SnapshotError,
    SnapshotMetadata,
    _check_model_config,
    _parse_space,
)
from rlmodules.networks import build_policy_network, mask_logits, parameter_count


class SnapshotPolicy:
    """A frozen player: observation -> action probabilities or an action.

    `action_probs` and `act` take one seat's observation exactly as its PettingZoo
    env gives it (a `{"observation", "action_mask"}` dict keeps its mask; for games
    whose mask is in `info`, as OpenSpiel's, pass `action_mask=`; without one, every
    action is legal). The `_batch` methods take the league's converted arrays.
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
        _check_model_config(meta.model_config, source)
        try:
            self.parameters = parameter_count(self.obs_shape, self.n_actions, meta.model_config)
            if self.parameters > MAX_PARAMETERS:  # refused before anything is allocated
                raise SnapshotError(
                    f"{source}: model_config {dict(meta.model_config)} declares "
                    f"{self.parameters:,} parameters (at most {MAX_PARAMETERS:,})"
                )
            _check_finite(weights, source)
            self.net = build_policy_network(self.obs_shape, self.n_actions, meta.model_config)
        except ValueError as err:
            if isinstance(err, SnapshotError):
                raise
            raise SnapshotError(f"{source}: model_config {err}") from None
        self._adapter: ObservationAdapter | None = None
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
        logits = self.net(obs.reshape(obs.shape[0], *self.obs_shape))
        return mask_logits(logits, torch.as_tensor(np.asarray(masks)))

    def league_observation(self, observation: Any, action_mask: Any = None) -> dict[str, Any]:
        """An env observation (and optional mask) as the league's masked dict."""
        if self._adapter is None:
            self._adapter = _game_adapter(self.meta.game, side_of(self.meta.player))
        return self._adapter.to_league(observation, action_mask)

    def action_probs(self, observation: Any, action_mask: Any = None) -> np.ndarray:
        obs = self.league_observation(observation, action_mask)
        return self.action_probs_batch(obs["observation"][None], obs["action_mask"][None])[0]

    def act(
        self,
        observation: Any,
        greedy: bool = True,
        rng: np.random.Generator | None = None,
        action_mask: Any = None,
    ) -> int:
        """The argmax action, or one sampled with ``rng`` (fresh if None)."""
        return choose_action(self.action_probs(observation, action_mask), rng, greedy)


def _game_adapter(game_id: str, side: str = "") -> ObservationAdapter:
    """The observation adapter of a seat of the snapshot's side (all its seats share
    their spaces)."""
    try:
        seat = game_layout(game_id).seats_of_side(side)[0]
        env = get_game(game_id).make()
    except UnknownGameError as err:
        raise SnapshotError(f"cannot convert observations: {err}") from None
    try:
        return env.adapters[seat]
    finally:
        env.close()


def _check_finite(weights: Mapping[str, Any], source: str) -> None:
    """Finite weights, on save and on load (their number is bounded by the file size;
    each tensor's shape is checked against the built network by `_load_weights`)."""
    for name, value in weights.items():
        if not np.all(np.isfinite(_to_numpy(value))):
            raise SnapshotError(f"{source}: tensor {name} holds NaN or infinite values")


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
