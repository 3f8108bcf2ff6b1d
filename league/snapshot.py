"""Player snapshots: inference-only weights in safetensors plus JSON metadata.

A snapshot directory holds `weights.safetensors` (the policy network only) and
`metadata.json`. Nothing is ever unpickled, so snapshots from anywhere are safe to
load, and `load_policy` needs neither Ray nor a running league: it rebuilds the
policy MLP with plain torch.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file

from envs.registry import UnknownGameError, game_spaces
from rlmodules.networks import build_mlp, mask_logits

FORMAT_VERSION = 1
WEIGHTS_FILE = "weights.safetensors"
METADATA_FILE = "metadata.json"
MODULE_CLASS = "rlmodules.masked_policy.MaskedActorCriticModule"


class SnapshotError(ValueError):
    """A snapshot that cannot be loaded: missing, corrupt, or made for something else."""


def space_to_json(space: gym.Space) -> dict[str, Any]:
    """A JSON description of the spaces the league uses (Dict, Box, Discrete)."""
    if isinstance(space, gym.spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_to_json(v) for k, v in space.spaces.items()}}
    if isinstance(space, gym.spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": str(space.dtype),
            "low": np.asarray(space.low).tolist(),
            "high": np.asarray(space.high).tolist(),
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    raise TypeError(f"cannot describe space {space} in a snapshot")


def space_from_json(data: Mapping[str, Any]) -> gym.Space:
    kind = data.get("type")
    if kind == "Dict":
        return gym.spaces.Dict({k: space_from_json(v) for k, v in data["spaces"].items()})
    if kind == "Box":
        return gym.spaces.Box(
            np.asarray(data["low"], dtype=data["dtype"]),
            np.asarray(data["high"], dtype=data["dtype"]),
            tuple(data["shape"]),
            np.dtype(data["dtype"]),
        )
    if kind == "Discrete":
        return gym.spaces.Discrete(data["n"], start=data.get("start", 0))
    raise SnapshotError(f"unknown space type {kind!r} in snapshot metadata")


@dataclass
class SnapshotMetadata:
    game: str
    observation_space: dict[str, Any]
    action_space: dict[str, Any]
    model_config: dict[str, Any]
    player: str
    role: str
    version: int | None = None
    parent: str | None = None
    env_steps: int = 0
    rating: float | None = None
    module_class: str = MODULE_CLASS
    format_version: int = FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str) -> SnapshotMetadata:
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise SnapshotError(
                f"{source}: snapshot format version {version!r} is not supported "
                f"(this league reads version {FORMAT_VERSION})"
            )
        if data.get("module_class") != MODULE_CLASS:
            raise SnapshotError(
                f"{source}: module class {data.get('module_class')!r} is not {MODULE_CLASS!r}"
            )
        try:
            return cls(**data)
        except TypeError as err:
            raise SnapshotError(f"{source}: bad metadata: {err}") from err


def player_metadata(
    game: str, model_config: Mapping[str, Any], player: str, env_steps: int
) -> SnapshotMetadata:
    """Metadata of a player's weights in `game` (role read from the `<role>_<n>` id)."""
    obs_space, act_space = game_spaces(game)
    return SnapshotMetadata(
        game=game,
        observation_space=space_to_json(obs_space),
        action_space=space_to_json(act_space),
        model_config=dict(model_config),
        player=player,
        role=player.split("@")[0].rsplit("_", 1)[0],
        env_steps=int(env_steps),
    )


def save_snapshot(
    path: str | Path, policy_state: Mapping[str, Any], meta: SnapshotMetadata
) -> Path:
    """Write a snapshot directory atomically (a half-written snapshot never appears).

    `policy_state` is the module's state dict; only `policy_net.*` tensors are kept.
    """
    path = Path(path)
    tensors = {
        k: np.ascontiguousarray(np.asarray(v, dtype=np.float32))
        for k, v in policy_state.items()
        if k.startswith("policy_net.")
    }
    if not tensors:
        raise SnapshotError("policy state has no policy_net tensors")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    save_file(tensors, str(tmp / WEIGHTS_FILE))
    (tmp / METADATA_FILE).write_text(json.dumps(asdict(meta), indent=2, sort_keys=True))
    if path.exists():
        # Directories cannot be swapped atomically: move the old one aside first, so
        # that at every moment one complete snapshot sits at `path` or beside it.
        old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old.", dir=path.parent))
        os.replace(path, old / path.name)
        os.replace(tmp, path)
        shutil.rmtree(old)
    else:
        os.replace(tmp, path)
    return path


def read_metadata(path: str | Path) -> SnapshotMetadata:
    path = Path(path)
    meta_path = path / METADATA_FILE
    if not meta_path.is_file():
        raise SnapshotError(f"{path}: not a snapshot (no {METADATA_FILE})")
    try:
        data = json.loads(meta_path.read_text())
    except json.JSONDecodeError as err:
        raise SnapshotError(f"{meta_path}: malformed JSON: {err}") from err
    if not isinstance(data, dict):
        raise SnapshotError(f"{meta_path}: metadata must be a JSON object")
    return SnapshotMetadata.from_json(data, str(meta_path))


class SnapshotPolicy:
    """A frozen player: observation dict -> action probabilities or an action.

    Observations are one PettingZoo observation dict, `{"observation", "action_mask"}`.
    """

    def __init__(self, meta: SnapshotMetadata, weights: Mapping[str, np.ndarray]):
        self.meta = meta
        obs_space = space_from_json(meta.observation_space)
        self.observation_space = obs_space
        self.n_actions = int(np.prod(obs_space["action_mask"].shape))
        obs_size = int(np.prod(obs_space["observation"].shape))
        cfg = meta.model_config
        net = build_mlp(obs_size, list(cfg["hidden_sizes"]), self.n_actions, cfg["activation"])
        state = {
            k.removeprefix("policy_net."): torch.from_numpy(np.array(v)) for k, v in weights.items()
        }
        try:
            net.load_state_dict(state, strict=True)
        except RuntimeError as err:
            raise SnapshotError(f"weights do not fit the model in the metadata: {err}") from err
        self.net = net.eval()

    def action_probs_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        obs = torch.as_tensor(np.asarray(observations), dtype=torch.float32)
        with torch.no_grad():
            logits = self.net(obs.reshape(obs.shape[0], -1))
            logits = mask_logits(logits, torch.as_tensor(np.asarray(masks)))
            return torch.softmax(logits, dim=-1).double().numpy()

    def action_probs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        return self.action_probs_batch(obs["observation"][None], obs["action_mask"][None])[0]

    def act(
        self,
        obs: Mapping[str, np.ndarray],
        greedy: bool = True,
        rng: np.random.Generator | None = None,
    ) -> int:
        probs = self.action_probs(obs)
        if greedy:
            return int(np.argmax(probs))
        rng = rng or np.random.default_rng()
        return int(rng.choice(len(probs), p=probs))


def load_policy(path: str | Path, game: str | None = None) -> SnapshotPolicy:
    """Load a snapshot directory as a policy; with `game`, refuse a snapshot of another game."""
    path = Path(path)
    meta = read_metadata(path)
    if game is not None and meta.game != game:
        raise SnapshotError(f"{path}: snapshot is for game {meta.game!r}, not {game!r}")
    _check_spaces_match_game(meta, path)
    weights_path = path / WEIGHTS_FILE
    if not weights_path.is_file():
        raise SnapshotError(f"{path}: missing {WEIGHTS_FILE}")
    try:
        weights = load_file(str(weights_path))
    except (SafetensorError, OSError, ValueError) as err:
        raise SnapshotError(
            f"{weights_path}: corrupt or truncated safetensors file: {err}"
        ) from err
    return SnapshotPolicy(meta, weights)


def _check_spaces_match_game(meta: SnapshotMetadata, path: Path) -> None:
    try:
        obs_space, act_space = game_spaces(meta.game)
    except UnknownGameError as err:
        raise SnapshotError(f"{path}: {err}") from err
    expected_obs = space_to_json(obs_space)
    expected_act = space_to_json(act_space)
    if meta.observation_space != expected_obs or meta.action_space != expected_act:
        raise SnapshotError(
            f"{path}: the snapshot's spaces do not match game {meta.game!r} "
            f"(observation {meta.observation_space} vs {expected_obs})"
        )
