"""Frozen snapshots: format and validation, a Ray-free policy, load/save, RLlib export.

ONNX export lives in ``league.snapshot.onnx`` (imported on demand: it needs onnx).
"""

from league.snapshot.files import (
    SnapshotLocation,
    load_snapshot,
    read_metadata,
    resolve_location,
    save_snapshot,
)
from league.snapshot.format import (
    FORMAT_VERSION,
    METADATA_FILE,
    MODULE_CLASS,
    POLICY_PREFIX,
    WEIGHTS_FILE,
    SnapshotError,
    SnapshotMetadata,
    player_metadata,
    space_from_json,
    space_to_json,
)
from league.snapshot.mixture import MixturePolicy, load_policy, save_mixture
from league.snapshot.policy import SnapshotPolicy
from league.snapshot.rllib_export import export_rllib_checkpoint

__all__ = [
    "FORMAT_VERSION",
    "METADATA_FILE",
    "MODULE_CLASS",
    "POLICY_PREFIX",
    "WEIGHTS_FILE",
    "SnapshotError",
    "SnapshotLocation",
    "SnapshotMetadata",
    "SnapshotPolicy",
    "MixturePolicy",
    "export_rllib_checkpoint",
    "load_policy",
    "load_snapshot",
    "save_mixture",
    "player_metadata",
    "read_metadata",
    "resolve_location",
    "save_snapshot",
    "space_from_json",
    "space_to_json",
]
