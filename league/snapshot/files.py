"""Saving and loading snapshots: where one lives, atomic writes, validated reads.

A snapshot lives at a local path or at a pyarrow filesystem URI (`file://`, `s3://`,
`gs://`, `hdfs://`, ...), or at a path inside a `pyarrow.fs.FileSystem` passed as
`filesystem=`. Every input is checked before anything is written, and every
problem on loading is a `SnapshotError` that names the problem and the path.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.fs as pafs
from safetensors import SafetensorError
from safetensors.numpy import load as load_tensors
from safetensors.numpy import save as dump_tensors

from league.snapshot.format import (
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_SAFETENSORS_HEADER_BYTES,
    MAX_WEIGHTS_BYTES,
    METADATA_FILE,
    POLICY_PREFIX,
    WEIGHT_DTYPE,
    WEIGHTS_FILE,
    SnapshotError,
    SnapshotMetadata,
    _check_spaces_match_game,
    check_json_shape,
    json_depth,
)
from league.snapshot.policy import SnapshotPolicy, _to_numpy

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

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
        _check_scheme_allowed(text)
        try:
            fs, path = pafs.FileSystem.from_uri(text)
        except (ValueError, OSError) as err:
            raise SnapshotError(f"{text}: cannot open snapshot location: {err}") from err
        return SnapshotLocation(fs, path, text)
    return SnapshotLocation(pafs.LocalFileSystem(), os.path.abspath(text), text)


SCHEMES_ENV = "LEAGUE_SNAPSHOT_SCHEMES"


def allowed_schemes() -> frozenset[str]:
    """URI schemes a snapshot may be read from or written to: `file` always, others
    (s3, gs, hdfs, abfs, ...) only when listed in LEAGUE_SNAPSHOT_SCHEMES, because
    opening them runs credential helpers and contacts hosts."""
    extra = os.environ.get(SCHEMES_ENV, "")
    return frozenset({"file"} | {s.strip().lower() for s in extra.split(",") if s.strip()})


def _check_scheme_allowed(uri: str) -> None:
    scheme = uri.split("://", 1)[0].lower()
    if scheme not in allowed_schemes():
        raise SnapshotError(
            f"{uri}: snapshot locations with scheme {scheme!r} are off; allow them with "
            f"{SCHEMES_ENV}={scheme} (local paths and file:// always work)"
        )
    if "?" in uri or "#" in uri:  # query parameters may name the host to connect to
        raise SnapshotError(
            f"{uri}: snapshot URIs may not carry query parameters or fragments; "
            f"configure the filesystem through its environment instead"
        )


def _info(loc: SnapshotLocation, path: str, shown: str) -> pafs.FileInfo:
    try:
        return loc.filesystem.get_file_info(path)
    except OSError as err:
        raise SnapshotError(f"{shown}: cannot read: {err}") from err


def _read_file(loc: SnapshotLocation, name: str, limit: int) -> bytes | None:
    """The bytes of one snapshot file (at most `limit`), or None if it does not exist."""
    path, shown = loc.child(name), loc.describe(name)
    info = _info(loc, path, shown)
    if info.type == pafs.FileType.NotFound:
        return None
    if info.type != pafs.FileType.File:
        raise SnapshotError(f"{shown}: is not a file")
    if info.size is not None and info.size > limit:
        raise SnapshotError(f"{shown}: {info.size:,} bytes is more than the {limit:,} allowed")
    try:
        with loc.filesystem.open_input_stream(path) as stream:
            data = _read_bounded(stream, limit, info.size)
    except OSError as err:
        raise SnapshotError(f"{shown}: cannot read: {err}") from err
    if len(data) > limit:
        raise SnapshotError(f"{shown}: more than the {limit:,} bytes allowed")
    return data


def _read_bounded(stream: Any, limit: int, size: int | None) -> bytes:
    """At most limit + 1 bytes, in chunks: pyarrow allocates the whole buffer a read
    asks for, so never ask for more than the file is said to hold (plus one byte to
    notice a file that grew after the size check)."""
    chunks, total = [], 0
    want = limit + 1 if size is None else min(size, limit) + 1
    while total < want:
        chunk = stream.read(min(want - total, 16 * 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


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


def _write_local_atomic(path: Path, files: Mapping[str, bytes]) -> None:
    """Fill a temp dir beside `path`, then rename it into place."""
    _check_replaceable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        for name, data in files.items():
            _write_durably(tmp / name, data)
        shared_permissions(tmp, directory=True)
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
    """Only a snapshot (or an empty directory) may be replaced: never a user's other
    files. A snapshot directory holds exactly the two snapshot files, so a folder that
    merely contains a `metadata.json` among other things is not one."""
    if not path.exists():
        return
    if not path.is_dir():
        raise SnapshotError(f"{path}: exists and is not a snapshot directory")
    entries = {entry.name for entry in path.iterdir()}
    if entries and (METADATA_FILE not in entries or not entries <= {METADATA_FILE, WEIGHTS_FILE}):
        raise SnapshotError(f"{path}: exists, is not empty and is not a snapshot; not replacing it")


def shared_permissions(path: Path, directory: bool) -> None:
    """Temp files and dirs are created private (0600/0700); a saved snapshot gets the
    permissions a plainly created file or folder would (0666/0777 minus the umask)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (setting and
    restoring it races with other threads creating files)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
    data = _read_file(loc, METADATA_FILE, MAX_METADATA_BYTES)
    if data is None:
        raise SnapshotError(_absent_message(loc))
    shown = loc.describe(METADATA_FILE)
    if json_depth(data) > MAX_METADATA_DEPTH:
        raise SnapshotError(f"{shown}: metadata is nested more than {MAX_METADATA_DEPTH} deep")
    try:
        parsed = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise SnapshotError(f"{shown}: malformed JSON: {err}") from err
    if not isinstance(parsed, dict):
        raise SnapshotError(f"{shown}: metadata must be a JSON object")
    check_json_shape(parsed, shown)
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
    data = _read_file(loc, WEIGHTS_FILE, MAX_WEIGHTS_BYTES)
    if data is None:
        raise SnapshotError(f"{shown}: missing (incomplete snapshot)")
    _check_safetensors_header(data, shown)
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


def _check_safetensors_header(data: bytes, shown: str) -> None:
    """The header's tensors are float32 and fit the file: checked before any tensor is
    built (a header may declare shapes far larger than the file holds)."""
    if len(data) < 8:
        raise SnapshotError(f"{shown}: corrupt or truncated safetensors file (no header)")
    size = int.from_bytes(data[:8], "little")
    if size > MAX_SAFETENSORS_HEADER_BYTES or 8 + size > len(data):
        raise SnapshotError(
            f"{shown}: corrupt or truncated safetensors file (header of {size:,} bytes)"
        )
    raw = data[8 : 8 + size]
    if json_depth(raw) > 4:
        raise SnapshotError(f"{shown}: corrupt safetensors header (nested too deep)")
    try:
        header = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SnapshotError(f"{shown}: corrupt safetensors header: {err}") from err
    if not isinstance(header, dict):
        raise SnapshotError(f"{shown}: corrupt safetensors header")
    body = len(data) - 8 - size
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if (
            entry.get("dtype") != "F32"
            or not isinstance(shape, list)
            or not all(isinstance(d, int) and d >= 0 for d in shape)
        ):
            raise SnapshotError(f"{shown}: tensor {name} is not a float32 tensor: {entry!r}")
        if 4 * math.prod(shape) > body:
            raise SnapshotError(
                f"{shown}: corrupt or truncated safetensors file: tensor {name} of shape "
                f"{shape} does not fit the file"
            )


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


def load_snapshot(
    path: str | os.PathLike[str],
    game: str | None = None,
    *,
    filesystem: pafs.FileSystem | None = None,
) -> SnapshotPolicy:
    """Load one snapshot (path or URI) as a policy; with `game`, refuse another game's."""
    loc = resolve_location(path, filesystem)
    meta, weights = _read_snapshot(loc, game)
    return SnapshotPolicy(meta, weights, source=loc.display)
