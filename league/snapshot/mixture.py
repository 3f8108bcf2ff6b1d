"""Mixture snapshots: the league's Nash mixture as one loadable policy.

A mixture directory holds `mixture.json` (format version, game, members with
weights) and one ordinary snapshot per member under `members/<id>/`. Loaded, it
plays as the mixture is meant to be played: one member, drawn by weight at the
start of each game (`new_game`), plays the whole game. Every member is validated
like any snapshot; nothing is unpickled.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.fs as pafs

from league.snapshot.files import _URI, load_snapshot, save_snapshot, shared_permissions
from league.snapshot.format import POLICY_PREFIX, SnapshotError
from league.snapshot.policy import SnapshotPolicy

MIXTURE_FILE = "mixture.json"
MIXTURE_FORMAT_VERSION = 1
MEMBERS_DIR = "members"
MAX_MIXTURE_FILE_BYTES = 1 << 20
MAX_MEMBERS = 4096


def is_mixture(path: str | os.PathLike[str]) -> bool:
    return (Path(path) / MIXTURE_FILE).is_file()


class MixturePolicy:
    """Members with weights; `action_probs` and `act` are the current game's member's."""

    def __init__(self, members: Mapping[str, SnapshotPolicy], weights: Mapping[str, float]):
        if not members or set(members) != set(weights):
            raise SnapshotError("a mixture needs members, each with a weight")
        games = {m.meta.game for m in members.values()}
        if len(games) != 1:
            raise SnapshotError(f"mixture members are for different games: {sorted(games)}")
        total = math.fsum(weights.values())
        if any(not math.isfinite(w) or w < 0 for w in weights.values()) or not total > 0:
            raise SnapshotError(f"mixture weights must be finite, >= 0, not all 0: {weights}")
        self.ids = tuple(members)
        self.members = dict(members)
        self.weights = np.array([weights[m] / total for m in self.ids])
        self.game = games.pop()
        self.meta = self.members[self.ids[int(np.argmax(self.weights))]].meta
        self.current = self.ids[int(np.argmax(self.weights))]

    def new_game(self, rng: np.random.Generator) -> str:
        """Draw the member that plays the next game (by weight); returns its id."""
        self.current = self.ids[int(rng.choice(len(self.ids), p=self.weights))]
        return self.current

    def action_probs(self, observation: Any, action_mask: Any = None) -> np.ndarray:
        return self.members[self.current].action_probs(observation, action_mask)

    def act(
        self, observation: Any, greedy: bool = True, rng: Any = None, action_mask: Any = None
    ) -> int:
        return self.members[self.current].act(
            observation, greedy=greedy, rng=rng, action_mask=action_mask
        )


def save_mixture(
    path: str | os.PathLike[str],
    members: Mapping[str, SnapshotPolicy],
    weights: Mapping[str, float],
) -> Path:
    """Write a mixture directory; refuses to replace anything that is not a mixture."""
    mixture = MixturePolicy(members, weights)  # validates before writing
    out = Path(path)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not is_mixture(out))):
        raise SnapshotError(f"{out}: exists and is not an empty directory or a mixture")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for module_id, policy in members.items():
            weights_state = {
                POLICY_PREFIX + k: v.numpy() for k, v in policy.net.state_dict().items()
            }
            save_snapshot(tmp / MEMBERS_DIR / module_id, weights_state, policy.meta)
        doc = {
            "format_version": MIXTURE_FORMAT_VERSION,
            "game": mixture.game,
            "members": [
                {"id": m, "weight": float(w)}
                for m, w in zip(mixture.ids, mixture.weights, strict=True)
            ],
        }
        (tmp / MIXTURE_FILE).write_text(json.dumps(doc, indent=2))
        shared_permissions(tmp, directory=True)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def load_mixture(path: str | os.PathLike[str], game: str | None = None) -> MixturePolicy:
    """Load a mixture directory written by `save_mixture` (members validated each)."""
    root = Path(path)
    file = root / MIXTURE_FILE
    if file.stat().st_size > MAX_MIXTURE_FILE_BYTES:
        raise SnapshotError(f"{file}: larger than {MAX_MIXTURE_FILE_BYTES} bytes")
    try:
        doc = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise SnapshotError(f"{file}: malformed JSON: {err}") from err
    if not isinstance(doc, dict) or doc.get("format_version") != MIXTURE_FORMAT_VERSION:
        raise SnapshotError(f"{file}: not a mixture of format version {MIXTURE_FORMAT_VERSION}")
    entries = doc.get("members")
    if not isinstance(entries, list) or not 0 < len(entries) <= MAX_MEMBERS:
        raise SnapshotError(f"{file}: members must be a list of 1..{MAX_MEMBERS} entries")
    members: dict[str, SnapshotPolicy] = {}
    weights: dict[str, float] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise SnapshotError(f"{file}: every member needs an id and a weight")
        module_id, weight = entry["id"], entry.get("weight")
        if "/" in module_id or module_id in ("", ".", "..") or module_id in members:
            raise SnapshotError(f"{file}: bad or repeated member id {module_id!r}")
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise SnapshotError(f"{file}: member {module_id!r} has no numeric weight")
        members[module_id] = load_snapshot(root / MEMBERS_DIR / module_id, game=game)
        weights[module_id] = float(weight)
    return MixturePolicy(members, weights)


def load_policy(
    path: str | os.PathLike[str],
    game: str | None = None,
    *,
    filesystem: pafs.FileSystem | None = None,
) -> SnapshotPolicy | MixturePolicy:
    """Load a snapshot or a mixture snapshot (local) as a policy; with `game`,
    refuse another game's. Snapshots also load from URIs or a `filesystem`."""
    if filesystem is None and not _URI.match(os.fspath(path)) and is_mixture(path):
        return load_mixture(path, game)
    return load_snapshot(path, game, filesystem=filesystem)
