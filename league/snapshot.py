"""Player snapshots: inference-only weights in safetensors plus JSON metadata.

A snapshot directory holds `weights.safetensors` (the policy network only) and
`metadata.json`. Nothing is ever unpickled, so snapshots from anywhere are safe to
load, and `load_policy` needs neither Ray nor a running league: it rebuilds the
policy MLP with plain torch.

A snapshot lives at a local path or at a pyarrow filesystem URI (`file://`, `s3://`,
`gs://`, `hdfs://`, ...), or at a path inside a `pyarrow.fs.FileSystem` passed as
`filesystem=`. Every input is checked before anything is written, and every
problem on loading is a `SnapshotError` that names the problem and the path.
docs/snapshots.md describes the format.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pyarrow.fs as pafs
import torch
from safetensors import SafetensorError
from safetensors.numpy import load as load_tensors
from safetensors.numpy import save as dump_tensors

from envs.registry import UnknownGameError, game_spaces
from rlmodules.networks import ACTIVATIONS, build_mlp, mask_logits

FORMAT_VERSION = 1
WEIGHTS_FILE = "weights.safetensors"
METADATA_FILE = "metadata.json"
MODULE_CLASS = "rlmodules.masked_policy.MaskedActorCriticModule"
POLICY_PREFIX = "policy_net."
WEIGHT_DTYPE = np.dtype(np.float32)

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class SnapshotError(ValueError):
    """A snapshot that cannot be loaded: missing, corrupt, or made for something else."""


# ---- spaces ----------------------------------------------------------------------


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
    """The gymnasium space `space_to_json` described."""
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


def _parse_space(data: Mapping[str, Any], source: str, what: str) -> gym.Space:
    """`space_from_json`, with a malformed description reported against its file."""
    try:
        return space_from_json(data)
    except SnapshotError as err:
        raise SnapshotError(f"{source}: {what}: {err}") from err
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise SnapshotError(f"{source}: malformed {what} {data!r}: {err!r}") from err


# ---- metadata --------------------------------------------------------------------

# JSON types of the metadata fields; checked so that a hand-edited file fails here,
# with its field named, rather than deep inside torch.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "game": (str,),
    "observation_space": (dict,),
    "action_space": (dict,),
    "model_config": (dict,),
    "player": (str,),
    "role": (str,),
    "version": (int, type(None)),
    "parent": (str, type(None)),
    "env_steps": (int,),
    "rating": (int, float, type(None)),
    "module_class": (str,),
    "format_version": (int,),
    "weights_sha256": (str, type(None)),
    "extra": (dict,),
}


@dataclass
class SnapshotMetadata:
    """What a snapshot is (game, spaces, model) and where it comes from (lineage).

    `weights_sha256` is filled in by `save_snapshot`; loaders compare it with the
    weights they read, which catches bit rot and a read that straddled a replacement.
    """

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
    weights_sha256: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str) -> SnapshotMetadata:
        """Validated metadata; the format version is checked first, as it decides the rest."""
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise SnapshotError(
                f"{source}: snapshot format version {version!r} is not supported "
                f"(this league reads version {FORMAT_VERSION})"
            )
        _check_field_names(data, source)
        _check_field_types(data, source)
        if data["module_class"] != MODULE_CLASS:
            raise SnapshotError(
                f"{source}: module class {data['module_class']!r} is not {MODULE_CLASS!r}"
            )
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def _check_field_names(data: Mapping[str, Any], source: str) -> None:
    names = {f.name for f in fields(SnapshotMetadata)}
    required = {
        f.name
        for f in fields(SnapshotMetadata)
        if f.default is MISSING and f.default_factory is MISSING
    }
    missing = sorted(n for n in required if n not in data)
    unknown = sorted(set(data) - names)
    if missing:
        raise SnapshotError(f"{source}: metadata is missing fields: {', '.join(missing)}")
    if unknown:
        raise SnapshotError(f"{source}: metadata has unknown fields: {', '.join(unknown)}")


def _check_field_types(data: Mapping[str, Any], source: str) -> None:
    for name, value in data.items():
        types = _FIELD_TYPES[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            wanted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise SnapshotError(
                f"{source}: metadata field {name!r} must be {wanted}, got {value!r}"
            )


def _check_model_config(config: Mapping[str, Any], source: str) -> tuple[list[int], str]:
    """(hidden sizes, activation) of a model_config, or an error naming what is wrong."""
    hidden = config.get("hidden_sizes")
    activation = config.get("activation")
    if not isinstance(hidden, list) or not all(
        isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hidden
    ):
        raise SnapshotError(
            f"{source}: model_config hidden_sizes must be a list of positive ints, got {hidden!r}"
        )
    if activation not in ACTIVATIONS:
        raise SnapshotError(
            f"{source}: model_config activation {activation!r} is not one of {sorted(ACTIVATIONS)}"
        )
    return hidden, activation


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


def _check_spaces_match_game(meta: SnapshotMetadata, source: str) -> None:
    """Refuse a snapshot whose spaces are not those its game has now."""
    try:
        obs_space, act_space = game_spaces(meta.game)
    except UnknownGameError as err:
        raise SnapshotError(f"{source}: {err}") from err
    for what, have, expected in (
        ("observation", meta.observation_space, space_to_json(obs_space)),
        ("action", meta.action_space, space_to_json(act_space)),
    ):
        if have != expected:
            raise SnapshotError(
                f"{source}: the snapshot's {what} space does not match game {meta.game!r} "
                f"({_describe(have)} in the snapshot, {_describe(expected)} in the game)"
            )


def _describe(space: Mapping[str, Any]) -> str:
    """A short, readable form of a JSON space for error messages."""
    try:
        return str(space_from_json(space))
    except (SnapshotError, KeyError, TypeError, ValueError, AttributeError):
        return json.dumps(space)


# ---- where a snapshot lives ------------------------------------------------------


@dataclass(frozen=True)
class SnapshotLocation:
    """A snapshot directory: a filesystem, a path inside it, and how the user named it."""

    filesystem: pafs.FileSystem
    path: str
    display: str

    @property
    def local(self) -> bool:
        """Local directories can be swapped in by rename; other filesystems cannot."""
        return isinstance(self.filesystem, pafs.LocalFileSystem)

    def child(self, name: str) -> str:
        return f"{self.path.rstrip('/')}/{name}"

    def describe(self, name: str) -> str:
        return f"{self.display.rstrip('/')}/{name}"


def resolve_location(
    path_or_uri: str | os.PathLike[str] | SnapshotLocation,
    filesystem: pafs.FileSystem | None = None,
) -> SnapshotLocation:
    """Where `path_or_uri` points: a URI goes through `pyarrow.fs.FileSystem.from_uri`."""
    if isinstance(path_or_uri, SnapshotLocation):
        return path_or_uri
    text = os.fspath(path_or_uri)
    if filesystem is not None:
        return SnapshotLocation(filesystem, text, text)
    if isinstance(path_or_uri, str) and _URI.match(text):
        try:
            fs, path = pafs.FileSystem.from_uri(text)
        except (ValueError, OSError) as err:
            raise SnapshotError(f"{text}: cannot open snapshot location: {err}") from err
        return SnapshotLocation(fs, path, text)
    return SnapshotLocation(pafs.LocalFileSystem(), os.path.abspath(text), text)


def _info(loc: SnapshotLocation, path: str, shown: str) -> pafs.FileInfo:
    try:
        return loc.filesystem.get_file_info(path)
    except OSError as err:
        raise SnapshotError(f"{shown}: cannot read: {err}") from err


def _read_file(loc: SnapshotLocation, name: str) -> bytes | None:
    """The bytes of one snapshot file, or None if it does not exist."""
    path, shown = loc.child(name), loc.describe(name)
    info = _info(loc, path, shown)
    if info.type == pafs.FileType.NotFound:
        return None
    if info.type != pafs.FileType.File:
        raise SnapshotError(f"{shown}: is not a file")
    try:
        with loc.filesystem.open_input_stream(path) as stream:
            return stream.read()
    except OSError as err:
        raise SnapshotError(f"{shown}: cannot read: {err}") from err


# ---- saving ----------------------------------------------------------------------


def save_snapshot(
    path: str | os.PathLike[str],
    policy_state: Mapping[str, Any],
    meta: SnapshotMetadata,
    *,
    filesystem: pafs.FileSystem | None = None,
) -> Path | str:
    """Write a snapshot so that a half-written one is never taken for a complete one.

    `policy_state` is the module's state dict; only `policy_net.*` tensors are kept.
    Everything is validated (metadata, spaces against the game, weights against the
    model_config) before the first byte is written. Local directories are written
    beside the target and renamed into place; on other filesystems the weights go
    first and `metadata.json` last, so a snapshot without metadata reads as
    incomplete. Returns where it wrote, as a Path for local paths and as given else.
    """
    loc = resolve_location(path, filesystem)
    weights, metadata = _serialize(policy_state, meta, loc.display)
    if loc.local:
        _write_local_atomic(Path(loc.path), {WEIGHTS_FILE: weights, METADATA_FILE: metadata})
    else:
        _write_ordered(loc, weights, metadata)
    given_plain_path = filesystem is None and not _URI.match(loc.display)
    return Path(path) if given_plain_path else loc.display


def _serialize(
    policy_state: Mapping[str, Any], meta: SnapshotMetadata, target: str
) -> tuple[bytes, bytes]:
    """(weights bytes, metadata bytes), after checking that they load back as a policy."""
    tensors = {
        k: np.ascontiguousarray(_to_numpy(v), dtype=WEIGHT_DTYPE)
        for k, v in policy_state.items()
        if k.startswith(POLICY_PREFIX)
    }
    if not tensors:
        raise SnapshotError(f"{target}: policy state has no {POLICY_PREFIX}* tensors")
    weights = dump_tensors(tensors)
    meta = replace(meta, weights_sha256=hashlib.sha256(weights).hexdigest())
    source = f"{target} (metadata to save)"
    try:
        text = meta.to_json()
    except (TypeError, ValueError) as err:
        raise SnapshotError(f"{source}: metadata is not JSON: {err}") from err
    checked = SnapshotMetadata.from_json(json.loads(text), source)
    _check_spaces_match_game(checked, source)
    SnapshotPolicy(checked, tensors, source=target)
    return weights, text.encode()


def _to_numpy(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _write_local_atomic(path: Path, files: Mapping[str, bytes]) -> None:
    """Fill a temp dir beside `path`, then rename it into place."""
    _check_replaceable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        for name, data in files.items():
            _write_durably(tmp / name, data)
        _swap_in(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_durably(path: Path, data: bytes) -> None:
    """Write and fsync, so that a crash after the rename cannot leave empty files."""
    with open(path, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())


def _check_replaceable(path: Path) -> None:
    """Only a snapshot (or an empty directory) may be replaced: never a user's other files."""
    if not path.exists():
        return
    if not path.is_dir():
        raise SnapshotError(f"{path}: exists and is not a snapshot directory")
    if any(path.iterdir()) and not (path / METADATA_FILE).is_file():
        raise SnapshotError(f"{path}: exists, is not empty and is not a snapshot; not replacing it")


def _swap_in(tmp: Path, path: Path) -> None:
    """Rename `tmp` to `path`, moving an old snapshot aside first and back on failure.

    Directories cannot be exchanged in one rename, so between the two renames `path`
    is briefly absent; it never holds a mixture of old and new files.
    """
    if not path.exists():
        os.replace(tmp, path)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old.", dir=path.parent))
    try:
        os.replace(path, old / path.name)
        try:
            os.replace(tmp, path)
        except BaseException:
            os.replace(old / path.name, path)
            raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def _write_ordered(loc: SnapshotLocation, weights: bytes, metadata: bytes) -> None:
    """Remote write: drop old metadata, write weights, then metadata (the commit mark)."""
    fs = loc.filesystem
    if _info(loc, loc.path, loc.display).type == pafs.FileType.File:
        raise SnapshotError(f"{loc.display}: exists and is not a snapshot directory")
    meta_path = loc.child(METADATA_FILE)
    try:
        fs.create_dir(loc.path, recursive=True)
        if _info(loc, meta_path, loc.describe(METADATA_FILE)).type == pafs.FileType.File:
            fs.delete_file(meta_path)
        for name, data in ((WEIGHTS_FILE, weights), (METADATA_FILE, metadata)):
            with fs.open_output_stream(loc.child(name)) as stream:
                stream.write(data)
    except OSError as err:
        raise SnapshotError(f"{loc.display}: cannot write snapshot: {err}") from err


# ---- loading ---------------------------------------------------------------------


def read_metadata(
    path: str | os.PathLike[str] | SnapshotLocation, *, filesystem: pafs.FileSystem | None = None
) -> SnapshotMetadata:
    """The validated metadata of a snapshot (its weights are not read)."""
    loc = resolve_location(path, filesystem)
    data = _read_file(loc, METADATA_FILE)
    if data is None:
        raise SnapshotError(_absent_message(loc))
    shown = loc.describe(METADATA_FILE)
    try:
        parsed = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SnapshotError(f"{shown}: malformed JSON: {err}") from err
    if not isinstance(parsed, dict):
        raise SnapshotError(f"{shown}: metadata must be a JSON object")
    return SnapshotMetadata.from_json(parsed, shown)


def _absent_message(loc: SnapshotLocation) -> str:
    if _info(loc, loc.path, loc.display).type == pafs.FileType.NotFound:
        return f"{loc.display}: no snapshot there (the path does not exist)"
    return (
        f"{loc.display}: not a snapshot, or an incomplete one "
        f"(no {METADATA_FILE}; it is written last)"
    )


def _read_weights(loc: SnapshotLocation, meta: SnapshotMetadata) -> dict[str, np.ndarray] | None:
    """The weights, or None if they are not the ones the metadata was written with."""
    shown = loc.describe(WEIGHTS_FILE)
    data = _read_file(loc, WEIGHTS_FILE)
    if data is None:
        raise SnapshotError(f"{shown}: missing (incomplete snapshot)")
    try:
        tensors = load_tensors(data)
    except (SafetensorError, ValueError, OSError) as err:
        raise SnapshotError(f"{shown}: corrupt or truncated safetensors file: {err}") from err
    if meta.weights_sha256 is not None and hashlib.sha256(data).hexdigest() != meta.weights_sha256:
        return None
    for name, tensor in tensors.items():
        if tensor.dtype != WEIGHT_DTYPE:
            raise SnapshotError(f"{shown}: tensor {name} is {tensor.dtype}, not {WEIGHT_DTYPE}")
    return tensors


def _read_snapshot(
    loc: SnapshotLocation, game: str | None
) -> tuple[SnapshotMetadata, dict[str, np.ndarray]]:
    """Metadata and matching weights; read twice if a save replaced it in between."""
    for _ in range(2):
        meta = read_metadata(loc)
        if game is not None and meta.game != game:
            raise SnapshotError(f"{loc.display}: snapshot is for game {meta.game!r}, not {game!r}")
        _check_spaces_match_game(meta, loc.describe(METADATA_FILE))
        weights = _read_weights(loc, meta)
        if weights is not None:
            return meta, weights
    raise SnapshotError(
        f"{loc.describe(WEIGHTS_FILE)}: corrupt: its SHA-256 is not the one in {METADATA_FILE}"
    )


def load_policy(
    path: str | os.PathLike[str],
    game: str | None = None,
    *,
    filesystem: pafs.FileSystem | None = None,
) -> SnapshotPolicy:
    """Load a snapshot (path or URI) as a policy; with `game`, refuse another game's."""
    loc = resolve_location(path, filesystem)
    meta, weights = _read_snapshot(loc, game)
    return SnapshotPolicy(meta, weights, source=loc.display)


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
        probs = self.action_probs(obs)
        if greedy:
            return int(np.argmax(probs))
        rng = rng or np.random.default_rng()
        # The softmax ran in float32: its sum can miss 1 by more than numpy accepts.
        return int(rng.choice(len(probs), p=probs / probs.sum()))


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


# ---- RLlib -----------------------------------------------------------------------


def export_rllib_checkpoint(
    snapshot_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    filesystem: pafs.FileSystem | None = None,
) -> Path:
    """Write an RLlib RLModule checkpoint of a snapshot, for `RLModule.from_checkpoint`.

    RLlib checkpoints pickle the module's constructor arguments, so they are made
    here, locally, from a validated snapshot rather than shipped in one. Imports Ray
    (only this function does). `out_dir` must not exist or be empty.
    """
    from rlmodules.masked_policy import MaskedActorCriticModule

    policy = load_policy(snapshot_path, filesystem=filesystem)
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SnapshotError(f"{out}: exists and is not an empty directory")
    module = MaskedActorCriticModule(
        observation_space=policy.observation_space,
        action_space=_parse_space(policy.meta.action_space, str(snapshot_path), "action space"),
        inference_only=True,
        model_config=dict(policy.meta.model_config),
    )
    module.set_state({POLICY_PREFIX + k: v for k, v in policy.net.state_dict().items()})
    module.save_to_path(str(out))
    return out
