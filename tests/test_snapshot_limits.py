"""Hostile snapshots: every limit is checked before anything is read whole or allocated."""

from __future__ import annotations

import hashlib
import json
import struct
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.numpy import save as dump_tensors

from envs.registry import game_spaces
from league.snapshot import SnapshotError, load_policy, player_metadata, save_snapshot
from league.snapshot.format import (
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_WEIGHTS_BYTES,
    METADATA_FILE,
    WEIGHTS_FILE,
)
from rlmodules.masked_policy import masked_policy_spec

MODEL = {"hidden_sizes": [16], "activation": "relu"}


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    obs_space, act_space = game_spaces("tictactoe")
    torch.manual_seed(0)
    module = masked_policy_spec(obs_space, act_space, MODEL).build()
    path = tmp_path / "snap"
    save_snapshot(path, module.get_state(), player_metadata("tictactoe", MODEL, "main_0", 1))
    return path


def _edit(path: Path, change: Any) -> None:
    meta = json.loads((path / METADATA_FILE).read_text())
    change(meta)
    (path / METADATA_FILE).write_text(json.dumps(meta))


def _refused_cheaply(path: Path, expected: str) -> None:
    """Refused with `expected` in the message, in well under a second and 50 MB."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(SnapshotError, match=expected):
            load_policy(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 2.0
    assert peak < 50 * 1024 * 1024, peak


def test_huge_declared_network_is_refused_before_it_is_built(snapshot):
    _edit(snapshot, lambda m: m["model_config"].update(hidden_sizes=[20000, 20000]))
    _refused_cheaply(snapshot, "declares 400,")
    _edit(snapshot, lambda m: m["model_config"].update(hidden_sizes=[1000000, 1000000]))
    _refused_cheaply(snapshot, "parameters")


def test_oversized_files_are_refused_without_reading_them(snapshot):
    weights = (snapshot / WEIGHTS_FILE).read_bytes()
    with open(snapshot / WEIGHTS_FILE, "r+b") as f:  # sparse: no disk used
        f.truncate(MAX_WEIGHTS_BYTES + 1)
    _refused_cheaply(snapshot, "bytes is more than")
    (snapshot / WEIGHTS_FILE).write_bytes(weights)
    with open(snapshot / METADATA_FILE, "r+b") as f:
        f.truncate(MAX_METADATA_BYTES + 1)
    _refused_cheaply(snapshot, "bytes is more than")


def test_deeply_nested_metadata_is_refused_without_recursion(snapshot):
    (snapshot / METADATA_FILE).write_text("[" * 200_000 + "]" * 200_000)
    _refused_cheaply(snapshot, f"nested more than {MAX_METADATA_DEPTH}")


def test_overlong_strings_and_huge_spaces_are_refused(snapshot, tmp_path):
    _edit(snapshot, lambda m: m.update(player="x" * 100_000))
    _refused_cheaply(snapshot, "string of 100,000 characters")
    _edit(snapshot, lambda m: m.update(player="main_0"))
    _edit(
        snapshot,
        lambda m: m["observation_space"]["spaces"]["observation"].update(
            shape=[100000, 100000], low=0, high=1
        ),
    )
    _refused_cheaply(snapshot, "observation space does not match game")


def _rewrite_weights(path: Path, tensors: dict[str, np.ndarray]) -> None:
    data = dump_tensors(tensors)
    (path / WEIGHTS_FILE).write_bytes(data)
    _edit(path, lambda m: m.update(weights_sha256=hashlib.sha256(data).hexdigest()))


def test_non_finite_weights_are_refused_on_save_and_on_load(snapshot):
    policy = load_policy(snapshot)
    tensors = {f"policy_net.{k}": v.numpy().copy() for k, v in policy.net.state_dict().items()}
    first = next(iter(tensors))
    tensors[first][0, 0] = np.nan
    with pytest.raises(SnapshotError, match="NaN or infinite"):
        save_snapshot(snapshot.parent / "other", tensors, policy.meta)
    assert not (snapshot.parent / "other").exists()
    _rewrite_weights(snapshot, tensors)
    _refused_cheaply(snapshot, "NaN or infinite")


def test_safetensors_header_declaring_more_than_the_file_holds_is_refused(snapshot):
    header = json.dumps(
        {"policy_net.0.weight": {"dtype": "F32", "shape": [100000, 100000], "data_offsets": [0, 4]}}
    ).encode()
    data = struct.pack("<Q", len(header)) + header + b"\0" * 4
    (snapshot / WEIGHTS_FILE).write_bytes(data)
    _edit(snapshot, lambda m: m.update(weights_sha256=hashlib.sha256(data).hexdigest()))
    _refused_cheaply(snapshot, "does not fit the file")


def test_a_valid_snapshot_still_loads(snapshot):
    policy = load_policy(snapshot)
    assert policy.parameters == sum(p.numel() for p in policy.net.parameters())


def test_memory_bomb_metadata_stays_under_200_mb_in_a_fresh_process(snapshot):
    """RSS is what counts (torch allocates outside tracemalloc's view)."""
    import subprocess
    import sys

    _edit(snapshot, lambda m: m["model_config"].update(hidden_sizes=[20000, 20000]))
    script = f"""
import resource
from league.snapshot import SnapshotError, load_policy
import torch  # imported before the baseline: only the load attempt is measured
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load_policy({str(snapshot)!r})
except SnapshotError as err:
    print("refused:", err)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("grew_kb", after - before)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "refused:" in out and "parameters" in out
    grew_kb = int(out.split("grew_kb")[1])
    assert grew_kb < 200 * 1024, grew_kb
