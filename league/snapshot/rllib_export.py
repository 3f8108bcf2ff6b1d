"""RLlib RLModule checkpoints made from validated snapshots."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.fs as pafs

from league.snapshot.files import load_snapshot
from league.snapshot.format import (
    POLICY_PREFIX,
    SnapshotError,
    _parse_space,
)


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

    policy = load_snapshot(snapshot_path, filesystem=filesystem)
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
