"""Module ids: the only place that spells their format (see DESIGN.md).

``<role>_<n>`` for trainable players, ``<player>@<version>`` for frozen
snapshots and ``ref=<name>`` for reference opponents (scripted, parameter-free
league members such as ``ref=minimax``); the rest of the code parses and builds
ids through these helpers and never splits strings by hand.

In a game with more than one side (seats with different spaces, e.g. predators
and prey: `league.core.seats`) every player belongs to one side and its id
starts with the side's name and a dot: ``adversary.main_0``,
``adversary.main_0@3``. A game with one side (every two-player game) has the
side ``""`` and ids without a prefix, exactly as before sides existed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MAIN = "main"
MAIN_EXPLOITER = "main_exploiter"
LEAGUE_EXPLOITER = "league_exploiter"
ROLE_NAMES: tuple[str, ...] = (MAIN, MAIN_EXPLOITER, LEAGUE_EXPLOITER)
"""Role names, in the order players are created and decisions are taken."""

_PLAYER_RE = re.compile(
    r"^(?:(?P<side>[a-z][a-z0-9_]*)\.)?(?P<role>main|main_exploiter|league_exploiter)_"
    r"(?P<index>0|[1-9][0-9]*)$"
)
_SNAPSHOT_RE = re.compile(
    r"^(?P<player>(?:[a-z][a-z0-9_]*\.)?[a-z_]+_(?:0|[1-9][0-9]*))@(0|[1-9][0-9]*)$"
)
_SIDE_RE = re.compile(r"^[a-z][a-z0-9_]*$")
REFERENCE_PREFIX = "ref="
# Until December 2026 reference ids were `ref=<name>`; ':' is not allowed in an RLlib
# module id, so stored league states are upgraded when they are read.
LEGACY_REFERENCE_PREFIX = "ref:"
# A game's opponent name ("minimax") or an import path ("my_bots.c4:Greedy").
_REFERENCE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(?::[A-Za-z_][A-Za-z0-9_.]*)?$")
MAX_REFERENCE_NAME = 200


@dataclass(frozen=True)
class ModuleId:
    """A parsed module id: a trainable player, or one of its snapshots."""

    role: str
    index: int
    version: int | None = None
    side: str = ""
    """The player's side ("" in a game with one side)."""

    @property
    def player(self) -> str:
        """The trainable player this module is (or was copied from)."""
        return player_id(self.role, self.index, self.side)

    @property
    def is_snapshot(self) -> bool:
        return self.version is not None

    def __str__(self) -> str:
        if self.version is None:
            return self.player
        return snapshot_id(self.player, self.version)


def player_id(role: str, index: int, side: str = "") -> str:
    """Id of trainable player ``index`` of ``role`` on ``side``, e.g. ``main_0``
    (one side) or ``adversary.main_0``."""
    if role not in ROLE_NAMES:
        raise ValueError(f"role must be one of {ROLE_NAMES}, got {role!r}")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be an int >= 0, got {index!r}")
    if side and not (isinstance(side, str) and _SIDE_RE.match(side)):
        raise ValueError(f"side must be lowercase letters, digits and _, got {side!r}")
    return f"{side}.{role}_{index}" if side else f"{role}_{index}"


def side_of(module_id: str) -> str:
    """The side of a player or snapshot id ("" without one); "" for anything else
    (reference opponents belong to no side)."""
    try:
        return parse_module_id(module_id).side
    except ValueError:
        return ""


def snapshot_id(player: str, version: int) -> str:
    """Id of snapshot ``version`` of trainable ``player``, e.g. ``main_0@12``."""
    parse_module_id(player)  # raises on a non-player id
    if "@" in player:
        raise ValueError(f"cannot snapshot a snapshot: {player!r}")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"version must be an int >= 0, got {version!r}")
    return f"{player}@{version}"


def parse_module_id(module_id: str) -> ModuleId:
    """Parse a trainable or snapshot id; ValueError for anything else.

    Learner-only modules (``shared_vf``, ``world_model``) are not league modules
    and are rejected on purpose: they must never reach matchmaking.
    """
    if not isinstance(module_id, str):
        raise ValueError(f"module id must be a str, got {module_id!r}")
    snap = _SNAPSHOT_RE.match(module_id)
    if snap is not None:
        base = parse_module_id(snap.group("player"))
        return ModuleId(base.role, base.index, int(snap.group(2)), base.side)
    m = _PLAYER_RE.match(module_id)
    if m is None:
        raise ValueError(
            f"not a league module id: {module_id!r} "
            "(expected '[<side>.]<role>_<n>' or '[<side>.]<role>_<n>@<version>')"
        )
    return ModuleId(m.group("role"), int(m.group("index")), side=m.group("side") or "")


def is_snapshot_id(module_id: str) -> bool:
    """True for a well-formed snapshot id, False for anything else."""
    try:
        return parse_module_id(module_id).is_snapshot
    except ValueError:
        return False


def is_player_id(module_id: str) -> bool:
    """True for a well-formed trainable-player id, False for anything else."""
    try:
        return not parse_module_id(module_id).is_snapshot
    except ValueError:
        return False


def reference_id(name: str) -> str:
    """Id of the reference opponent ``name`` (a game's opponent or an import path)."""
    if (
        not isinstance(name, str)
        or len(name) > MAX_REFERENCE_NAME
        or not _REFERENCE_NAME_RE.match(name)
    ):
        raise ValueError(
            f"not a reference opponent name: {name!r} (a game's opponent such as 'minimax', "
            "or package.module:callable)"
        )
    # An import path's ':' becomes '=': RLlib refuses ':' in module ids.
    return REFERENCE_PREFIX + name.replace(":", "=")


def reference_name(module_id: str) -> str:
    """The opponent name inside a reference id; ValueError for anything else."""
    if not is_reference_id(module_id):
        raise ValueError(f"not a reference opponent id: {module_id!r}")
    return module_id[len(REFERENCE_PREFIX) :].replace("=", ":")


def is_reference_id(module_id: str) -> bool:
    """True for ``ref=<name>``: a scripted league member with no weights."""
    if not isinstance(module_id, str) or not module_id.startswith(REFERENCE_PREFIX):
        return False
    name = module_id[len(REFERENCE_PREFIX) :].replace("=", ":")
    return len(name) <= MAX_REFERENCE_NAME and bool(_REFERENCE_NAME_RE.match(name))


def upgrade_reference_ids(data: Any) -> Any:
    """`data` (a stored league state, JSON-like) with every legacy reference id
    (``ref=<name>``, as keys or values) written the current way."""
    if isinstance(data, str):
        if data.startswith(LEGACY_REFERENCE_PREFIX):
            name = data[len(LEGACY_REFERENCE_PREFIX) :]
            if len(name) <= MAX_REFERENCE_NAME and _REFERENCE_NAME_RE.match(name):
                return reference_id(name)
        return data
    if isinstance(data, dict):
        return {upgrade_reference_ids(k): upgrade_reference_ids(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return type(data)(upgrade_reference_ids(v) for v in data)
    return data


def is_frozen_id(module_id: str) -> bool:
    """A module that never trains: a snapshot or a reference opponent."""
    return is_snapshot_id(module_id) or is_reference_id(module_id)
