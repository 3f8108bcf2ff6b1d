"""The snapshot format: file names, metadata and its validation, spaces as JSON.

A snapshot directory holds `weights.safetensors` (the policy network only) and
`metadata.json`. Nothing is ever unpickled. docs/snapshots.md describes the format.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

import gymnasium as gym
import numpy as np

from envs.registry import UnknownGameError, game_spaces
from league.core.ids import parse_module_id, side_of
from rlmodules.network_options import ACTIVATION_NAMES, ENCODERS, check_conv_filters

FORMAT_VERSION = 1
WEIGHTS_FILE = "weights.safetensors"
METADATA_FILE = "metadata.json"
MODULE_CLASS = "rlmodules.masked_policy.MaskedActorCriticModule"
POLICY_PREFIX = "policy_net."
WEIGHT_DTYPE = np.dtype(np.float32)


class SnapshotError(ValueError):
    """A snapshot that cannot be loaded: missing, corrupt, or made for something else."""


# Limits checked before anything is read whole or allocated (docs/snapshots.md): a
# snapshot of a few KB must not be able to ask for gigabytes.
MAX_METADATA_BYTES = 1024 * 1024
MAX_WEIGHTS_BYTES = 1024 * 1024 * 1024
MAX_SAFETENSORS_HEADER_BYTES = 1024 * 1024
MAX_PARAMETERS = 100_000_000
MAX_METADATA_DEPTH = 32
MAX_STRING_LENGTH = 4096
MAX_SPACE_ELEMENTS = 10_000_000
MAX_ACTIONS = 1_000_000


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
    """The gymnasium space `space_to_json` described (sizes checked before allocating)."""
    kind = data.get("type")
    if kind == "Box":
        shape = data["shape"]
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 < d for d in shape
        ):
            raise SnapshotError(f"Box shape must be a list of positive ints, got {shape!r}")
        if math.prod(shape) > MAX_SPACE_ELEMENTS:
            raise SnapshotError(f"Box shape {shape} has more than {MAX_SPACE_ELEMENTS:,} elements")
    if kind == "Discrete" and not (
        isinstance(data["n"], int)
        and not isinstance(data["n"], bool)
        and 0 < data["n"] <= MAX_ACTIONS
    ):
        raise SnapshotError(f"Discrete n must be an int in 1..{MAX_ACTIONS:,}, got {data['n']!r}")
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


def check_json_shape(value: Any, source: str, depth: int = 0) -> None:
    """Refuse metadata nested deeper than MAX_METADATA_DEPTH or with overlong strings."""
    if depth > MAX_METADATA_DEPTH:
        raise SnapshotError(f"{source}: metadata is nested more than {MAX_METADATA_DEPTH} deep")
    if isinstance(value, str):
        if len(value) > MAX_STRING_LENGTH:
            raise SnapshotError(
                f"{source}: metadata holds a string of {len(value):,} characters "
                f"(at most {MAX_STRING_LENGTH:,})"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            check_json_shape(key, source, depth + 1)
            check_json_shape(item, source, depth + 1)
    elif isinstance(value, list):
        for item in value:
            check_json_shape(item, source, depth + 1)


def json_depth(data: bytes) -> int:
    """Deepest bracket nesting of a JSON text, strings skipped: computed without
    recursion, so it can be checked before `json.loads` recurses into it."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


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
    if activation not in ACTIVATION_NAMES:
        raise SnapshotError(
            f"{source}: model_config activation {activation!r} is not one of {sorted(ACTIVATION_NAMES)}"
        )
    if config.get("encoder", "mlp") not in ENCODERS:
        raise SnapshotError(
            f"{source}: model_config encoder {config.get('encoder')!r} is not one of "
            f"{list(ENCODERS)}"
        )
    if "conv_filters" in config:
        try:
            check_conv_filters(config["conv_filters"])
        except ValueError as err:
            raise SnapshotError(f"{source}: model_config {err}") from None
    return hidden, activation


def player_metadata(
    game: str, model_config: Mapping[str, Any], player: str, env_steps: int
) -> SnapshotMetadata:
    """Metadata of a player's weights in `game`; role and side are parsed from its
    module id (the side's spaces are the snapshot's)."""
    obs_space, act_space = game_spaces(game, side_of(player))
    return SnapshotMetadata(
        game=game,
        observation_space=space_to_json(obs_space),
        action_space=space_to_json(act_space),
        model_config=dict(model_config),
        player=player,
        role=parse_module_id(player).role,
        env_steps=int(env_steps),
    )


def _check_spaces_match_game(meta: SnapshotMetadata, source: str) -> None:
    """Refuse a snapshot whose spaces are not those its game has now."""
    try:
        obs_space, act_space = game_spaces(meta.game, side_of(meta.player))
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
