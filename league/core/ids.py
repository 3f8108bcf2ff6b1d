"""Module ids: the only place that spells their format (see DESIGN.md).

``<role>_<n>`` for trainable players and ``<player>@<version>`` for frozen
snapshots; the rest of the code parses and builds ids through these helpers and
never splits strings by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAIN = "main"
MAIN_EXPLOITER = "main_exploiter"
LEAGUE_EXPLOITER = "league_exploiter"
ROLE_NAMES: tuple[str, ...] = (MAIN, MAIN_EXPLOITER, LEAGUE_EXPLOITER)
"""Role names, in the order players are created and decisions are taken."""

_PLAYER_RE = re.compile(r"^(main|main_exploiter|league_exploiter)_(0|[1-9][0-9]*)$")
_SNAPSHOT_RE = re.compile(r"^(?P<player>[a-z_]+_(?:0|[1-9][0-9]*))@(0|[1-9][0-9]*)$")


@dataclass(frozen=True)
class ModuleId:
    """A parsed module id: a trainable player, or one of its snapshots."""

    role: str
    index: int
    version: int | None = None

    @property
    def player(self) -> str:
        """The trainable player this module is (or was copied from)."""
        return player_id(self.role, self.index)

    @property
    def is_snapshot(self) -> bool:
        return self.version is not None

    def __str__(self) -> str:
        if self.version is None:
            return self.player
        return snapshot_id(self.player, self.version)


def player_id(role: str, index: int) -> str:
    """Id of trainable player ``index`` of ``role``, e.g. ``main_0``."""
    if role not in ROLE_NAMES:
        raise ValueError(f"role must be one of {ROLE_NAMES}, got {role!r}")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be an int >= 0, got {index!r}")
    return f"{role}_{index}"


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
        return ModuleId(base.role, base.index, int(snap.group(2)))
    m = _PLAYER_RE.match(module_id)
    if m is None:
        raise ValueError(
            f"not a league module id: {module_id!r} "
            "(expected '<role>_<n>' or '<role>_<n>@<version>')"
        )
    return ModuleId(m.group(1), int(m.group(2)))


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
