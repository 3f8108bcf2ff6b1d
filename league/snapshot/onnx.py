"""Export a snapshot's policy as ONNX, for runtimes without Python or torch.

The graph takes `observation` (float32, `[batch, *obs_shape]`) and `action_mask`
(`[batch, n_actions]`, float32 or int8; nonzero means legal) and returns
`action_probs` (`[batch, n_actions]`), exactly 0 on illegal actions, with a
dynamic batch axis. It computes what `SnapshotPolicy.action_probs_batch` computes.

torch 2.13's default (dynamo) ONNX exporter needs the `onnxscript` package; this
module uses the TorchScript exporter (`dynamo=False`), which needs only `onnx`.
That exporter is deprecated in torch, so its deprecation warning is silenced here:
callers cannot act on it, and the graph (Gemm, activations, Where, Softmax) is
one it has always handled.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Literal

import onnx
import torch
from torch import nn

from league.snapshot.files import load_snapshot, shared_permissions
from league.snapshot.format import SnapshotError
from league.snapshot.policy import SnapshotPolicy
from rlmodules.networks import mask_logits

INPUT_NAMES = ("observation", "action_mask")
OUTPUT_NAME = "action_probs"
OPSET_VERSION = 17
MASK_DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "int8": torch.int8}


class _ProbsGraph(nn.Module):
    """observation, action_mask -> masked softmax, the graph that is exported."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
        logits = self.net(observation)
        return torch.softmax(mask_logits(logits, action_mask), dim=-1)


def export_onnx(
    snapshot_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    mask_dtype: Literal["float32", "int8"] = "float32",
    opset_version: int = OPSET_VERSION,
    overwrite: bool = False,
) -> Path:
    """Write the snapshot's policy to `out_path` (a local file) as a checked ONNX model.

    `snapshot_path` may be a path or a pyarrow filesystem URI. The file is written
    beside `out_path` and renamed into place, so a failed export leaves no model.
    The snapshot's metadata is kept in the model's metadata_props.
    """
    if mask_dtype not in MASK_DTYPES:
        raise ValueError(f"mask_dtype must be one of {sorted(MASK_DTYPES)}, got {mask_dtype!r}")
    policy = load_snapshot(snapshot_path)
    out = Path(out_path)
    if out.exists() and not overwrite:
        raise SnapshotError(f"{out}: exists; not overwriting it (pass overwrite=True / --force)")
    if out.is_dir():
        raise SnapshotError(f"{out}: is a directory, not an .onnx file path")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        _trace_to_onnx(policy, tmp, MASK_DTYPES[mask_dtype], opset_version)
        _annotate(tmp, policy)
        shared_permissions(tmp, directory=False)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _trace_to_onnx(
    policy: SnapshotPolicy, path: Path, mask_dtype: torch.dtype, opset_version: int
) -> None:
    """Run torch's TorchScript ONNX exporter with a dynamic batch axis."""
    batch = 2  # >1, so that no size-1 batch gets folded into the graph
    example = (
        torch.zeros((batch, *policy.obs_shape), dtype=torch.float32),
        torch.ones((batch, policy.n_actions), dtype=mask_dtype),
    )
    dynamic = {name: {0: "batch"} for name in (*INPUT_NAMES, OUTPUT_NAME)}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.onnx")
        warnings.filterwarnings("ignore", message=r".*legacy TorchScript-based ONNX export")
        torch.onnx.export(
            _ProbsGraph(policy.net).eval(),
            example,
            str(path),
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes=dynamic,
            opset_version=opset_version,
            dynamo=False,
        )


def _annotate(path: Path, policy: SnapshotPolicy) -> None:
    """Record which snapshot the model came from, then check the model."""
    model = onnx.load(str(path))
    meta = policy.meta
    props = {
        "league.game": meta.game,
        "league.player": meta.player,
        "league.snapshot_metadata": json.dumps(meta.__dict__, sort_keys=True),
    }
    for key, value in props.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
