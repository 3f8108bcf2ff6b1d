"""Tuning as data: named presets and each registry game's settings (`presets.yaml`).

The registry (`envs/registry.py`) knows games: how to make them, their seats and
teams, their reference bots. What a game was measured to train best with lives here,
as data, each value beside the figure that justified it (`evidence`). A preset is a
named bundle of settings (`board`, `poker`, `descent`) that `--preset NAME` applies to
any game; a registry game's entry names the preset it builds on and adds its own. A
game outside the registry gets the entry of its kind (`kinds`), if any.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

PRESETS_FILE = Path(__file__).with_name("presets.yaml")
MAX_PRESETS_BYTES = 1024 * 1024


class PresetError(ValueError):
    """An unknown preset name, or a presets file that does not hold together."""


def merge_settings(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """`top` over `base`; a group (a nested mapping: `ppo`, `league`, ...) is merged
    key by key."""
    merged = {**base, **top}
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
            merged[key] = {**base[key], **value}
    return merged


@functools.cache
def _data() -> dict[str, Any]:
    raw = PRESETS_FILE.read_bytes()
    if len(raw) > MAX_PRESETS_BYTES:
        raise PresetError(f"{PRESETS_FILE}: {len(raw):,} bytes is more than {MAX_PRESETS_BYTES:,}")
    data = yaml.safe_load(raw)
    if not isinstance(data, dict) or not {"presets", "games", "kinds"} <= set(data):
        raise PresetError(f"{PRESETS_FILE}: must map 'presets', 'games' and 'kinds'")
    return data


def preset_names() -> tuple[str, ...]:
    return tuple(_data()["presets"])


def preset_help(name: str) -> str:
    return str(_data()["presets"][name].get("help", ""))


def preset_settings(name: str) -> dict[str, Any]:
    """A preset's settings, over the preset it is based on (`base`)."""
    presets = _data()["presets"]
    if name not in presets:
        raise PresetError(f"unknown preset {name!r}; known presets: {', '.join(presets)}")
    entry = presets[name]
    base = preset_settings(entry["base"]) if entry.get("base") else {}
    return merge_settings(base, entry.get("settings") or {})


def _entry_settings(entry: Mapping[str, Any] | None) -> dict[str, Any]:
    if entry is None:
        return {}
    base = preset_settings(entry["preset"]) if entry.get("preset") else {}
    return merge_settings(base, entry.get("settings") or {})


def game_settings(game: str) -> dict[str, Any]:
    """A registry game's measured settings (its preset, then its own), or {}."""
    return _entry_settings(_data()["games"].get(game))


def kind_settings(kind: str) -> dict[str, Any]:
    """The measured settings of a kind of game outside the registry, or {}."""
    return _entry_settings(_data()["kinds"].get(kind))


def evidence(name: str) -> list[dict[str, Any]]:
    """The evidence items of a preset, a game or a kind entry (and of the preset it
    uses)."""
    data = _data()
    entry = data["presets"].get(name) or data["games"].get(name) or data["kinds"].get(name) or {}
    own = list(entry.get("evidence") or [])
    parent = entry.get("base") or entry.get("preset")
    return (evidence(parent) if parent else []) + own


def game_entries() -> tuple[str, ...]:
    return tuple(_data()["games"])


def kind_entries() -> tuple[str, ...]:
    return tuple(_data()["kinds"])
