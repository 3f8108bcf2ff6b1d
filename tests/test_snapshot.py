"""Snapshots: storage (paths, URIs, other filesystems), bad input, ONNX and RLlib export.

Test snapshots come from a freshly built MaskedActorCriticModule, so the weights are
the real module's. Nothing here starts Ray; the RLlib test only imports ray.rllib.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fsspec.implementations.local import LocalFileSystem as FsspecLocal
from pyarrow.fs import FSSpecHandler, PyFileSystem
from ray.rllib.core.columns import Columns

from envs.registry import game_spaces, get_game
from league.snapshot import (
    METADATA_FILE,
    WEIGHTS_FILE,
    SnapshotError,
    SnapshotMetadata,
    export_rllib_checkpoint,
    load_policy,
    player_metadata,
    read_metadata,
    save_snapshot,
    space_to_json,
)
from league.snapshot import files as snap_mod
from league.tools.evaluation import Episode
from rlmodules.masked_policy import masked_policy_spec

REPO = Path(__file__).resolve().parents[1]
MODEL_CONFIG = {"hidden_sizes": [32, 32], "activation": "relu"}


# ---- helpers ---------------------------------------------------------------------


def module_state(game: str, seed: int = 0) -> dict[str, Any]:
    """The full state (policy and value nets) of a freshly built module."""
    obs_space, act_space = game_spaces(game)
    torch.manual_seed(seed)
    module = masked_policy_spec(obs_space, act_space, MODEL_CONFIG).build()
    return module.get_state()


@pytest.fixture(scope="module")
def states() -> dict[str, dict[str, Any]]:
    return {
        "tictactoe": module_state("tictactoe"),
        "tictactoe_b": module_state("tictactoe", seed=1),
        "connect_four": module_state("connect_four"),
    }


def make_snapshot(path: Path | str, game: str, state: dict[str, Any], **kwargs: Any) -> Any:
    return save_snapshot(path, state, player_metadata(game, MODEL_CONFIG, "main_0", 123), **kwargs)


def random_positions(game: str, n: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Observations of random play in the real PettingZoo env (so all are reachable)."""
    env = get_game(game).make()
    rng = np.random.default_rng(seed)
    positions: list[dict[str, np.ndarray]] = []

    def random_move(obs: dict[str, np.ndarray]) -> int:
        positions.append({k: np.array(v) for k, v in obs.items()})
        return int(rng.choice(np.flatnonzero(obs["action_mask"])))

    episode = 0
    while len(positions) < n:
        choosers = dict.fromkeys(env.possible_agents, random_move)
        Episode(env, choosers, seed + episode, turn_based=True).play()
        episode += 1
    return positions[:n]


def stacked(positions: list[dict[str, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    obs = np.stack([p["observation"] for p in positions])
    masks = np.stack([p["action_mask"] for p in positions])
    return obs, masks


def probe(game: str) -> tuple[np.ndarray, np.ndarray]:
    return stacked(random_positions(game, 64, seed=7))


def edit_metadata(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    meta = json.loads((path / METADATA_FILE).read_text())
    change(meta)
    (path / METADATA_FILE).write_text(json.dumps(meta))


# ---- round trips and storage -------------------------------------------------------


@pytest.mark.parametrize("game", ["tictactoe", "connect_four"])
def test_round_trip_gives_the_module_probabilities(tmp_path, states, game):
    path = tmp_path / "snap"
    assert make_snapshot(path, game, states[game]) == path
    assert sorted(os.listdir(path)) == [METADATA_FILE, WEIGHTS_FILE]  # no pickle anywhere

    obs_space, act_space = game_spaces(game)
    module = masked_policy_spec(obs_space, act_space, MODEL_CONFIG, inference_only=True).build()
    module.set_state(states[game])
    obs, masks = probe(game)
    batch = {
        Columns.OBS: {"observation": torch.as_tensor(obs), "action_mask": torch.as_tensor(masks)}
    }
    with torch.no_grad():
        expected = torch.softmax(module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS], -1)

    policy = load_policy(path, game=game)
    np.testing.assert_allclose(policy.action_probs_batch(obs, masks), expected.numpy(), atol=1e-6)
    assert policy.meta.player == "main_0" and policy.meta.role == "main"
    assert policy.meta.env_steps == 123 and len(policy.meta.weights_sha256) == 64


def test_file_uri_round_trip(tmp_path, states):
    uri = (tmp_path / "uri" / "snap").as_uri()
    assert uri.startswith("file:///")
    assert make_snapshot(uri, "tictactoe", states["tictactoe"]) == uri
    obs, masks = probe("tictactoe")
    by_uri = load_policy(uri, game="tictactoe").action_probs_batch(obs, masks)
    by_path = load_policy(tmp_path / "uri" / "snap").action_probs_batch(obs, masks)
    np.testing.assert_array_equal(by_uri, by_path)
    assert read_metadata(uri).game == "tictactoe"


class RecordingHandler(FSSpecHandler):
    """An fsspec-backed, non-local pyarrow filesystem that logs writes and deletes."""

    def __init__(self, log: list[tuple[str, str]]):
        super().__init__(FsspecLocal())
        self.log = log

    def open_output_stream(self, path, metadata):
        self.log.append(("write", path.rsplit("/", 1)[-1]))
        return super().open_output_stream(path, metadata)

    def delete_file(self, path):
        self.log.append(("delete", path.rsplit("/", 1)[-1]))
        return super().delete_file(path)


def test_remote_filesystem_writes_weights_first_and_metadata_last(tmp_path, states):
    log: list[tuple[str, str]] = []
    fs = PyFileSystem(RecordingHandler(log))
    path = str(tmp_path / "remote" / "snap")
    make_snapshot(path, "tictactoe", states["tictactoe"], filesystem=fs)
    assert log == [("write", WEIGHTS_FILE), ("write", METADATA_FILE)]

    log.clear()
    make_snapshot(path, "tictactoe", states["tictactoe_b"], filesystem=fs)
    # Old metadata goes first: new weights never sit under old metadata.
    assert log == [("delete", METADATA_FILE), ("write", WEIGHTS_FILE), ("write", METADATA_FILE)]
    obs, masks = probe("tictactoe")
    remote = load_policy(path, filesystem=fs).action_probs_batch(obs, masks)
    local = load_policy(path).action_probs_batch(obs, masks)
    np.testing.assert_array_equal(remote, local)

    fs.delete_file(f"{path}/{METADATA_FILE}")  # as if the writer died before the last step
    with pytest.raises(SnapshotError, match="incomplete") as err:
        load_policy(path, filesystem=fs)
    assert path in str(err.value)


def test_saving_over_a_snapshot_replaces_it_whole(tmp_path, states):
    path = tmp_path / "snap"
    obs, masks = probe("tictactoe")
    make_snapshot(path, "tictactoe", states["tictactoe"])
    first = load_policy(path).action_probs_batch(obs, masks)
    make_snapshot(path, "tictactoe", states["tictactoe_b"])
    second = load_policy(path).action_probs_batch(obs, masks)
    assert not np.allclose(first, second)
    assert os.listdir(tmp_path) == ["snap"]  # no temp or old directories left behind


def test_a_failed_replacement_keeps_the_old_snapshot(tmp_path, states, monkeypatch):
    path = tmp_path / "snap"
    obs, masks = probe("tictactoe")
    make_snapshot(path, "tictactoe", states["tictactoe"])
    before = load_policy(path).action_probs_batch(obs, masks)
    real_replace = os.replace

    def failing_replace(src, dst):
        if Path(dst) == path and Path(src).name.startswith(".snap."):
            raise OSError("disk full")  # the new snapshot cannot be renamed into place
        real_replace(src, dst)

    monkeypatch.setattr(snap_mod.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        make_snapshot(path, "tictactoe", states["tictactoe_b"])
    monkeypatch.undo()
    np.testing.assert_array_equal(load_policy(path).action_probs_batch(obs, masks), before)
    assert os.listdir(tmp_path) == ["snap"]


def test_save_refuses_to_replace_a_directory_that_is_not_a_snapshot(tmp_path, states):
    path = tmp_path / "notes"
    path.mkdir()
    (path / "keep.txt").write_text("mine")
    with pytest.raises(SnapshotError, match="not a snapshot") as err:
        make_snapshot(path, "tictactoe", states["tictactoe"])
    assert str(path) in str(err.value)
    assert os.listdir(path) == ["keep.txt"]


# ---- bad input on loading ----------------------------------------------------------


def _truncate(path: Path) -> None:
    data = (path / WEIGHTS_FILE).read_bytes()
    (path / WEIGHTS_FILE).write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    (path / WEIGHTS_FILE).write_bytes(b"this is not a safetensors file")


def _flip_last_byte(path: Path) -> None:
    data = bytearray((path / WEIGHTS_FILE).read_bytes())
    data[-1] ^= 0x40
    (path / WEIGHTS_FILE).write_bytes(bytes(data))


def _other_game_spaces(meta: dict[str, Any]) -> None:
    meta["observation_space"] = space_to_json(game_spaces("connect_four")[0])


BAD_SNAPSHOTS: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated weights": (_truncate, "corrupt or truncated safetensors"),
    "garbage weights": (_garbage, "corrupt or truncated safetensors"),
    "bit flip in weights": (_flip_last_byte, "SHA-256"),
    "missing weights": (lambda p: (p / WEIGHTS_FILE).unlink(), "missing"),
    "missing metadata": (lambda p: (p / METADATA_FILE).unlink(), "incomplete"),
    "malformed JSON": (lambda p: (p / METADATA_FILE).write_text("{not json"), "malformed JSON"),
    "JSON not an object": (lambda p: (p / METADATA_FILE).write_text("[1, 2]"), "JSON object"),
    "format version": (
        lambda p: edit_metadata(p, lambda m: m.update(format_version=2)),
        "format version 2 is not supported",
    ),
    "missing fields": (
        lambda p: edit_metadata(p, lambda m: [m.pop("game"), m.pop("model_config")]),
        "missing fields: game, model_config",
    ),
    "unknown field": (
        lambda p: edit_metadata(p, lambda m: m.update(colour="blue")),
        "unknown fields: colour",
    ),
    "wrong field type": (
        lambda p: edit_metadata(p, lambda m: m.update(env_steps="many")),
        "'env_steps' must be int",
    ),
    "spaces of another game": (
        lambda p: edit_metadata(p, _other_game_spaces),
        "observation space does not match game 'tictactoe'",
    ),
    "unknown game": (
        lambda p: edit_metadata(p, lambda m: m.update(game="go")),
        "unknown game 'go'",
    ),
    "weights do not fit model_config": (
        lambda p: edit_metadata(p, lambda m: m["model_config"].update(hidden_sizes=[16, 32])),
        "policy_net.0.weight is [32, 18], the model needs [16, 18]",
    ),
    "bad activation": (
        lambda p: edit_metadata(p, lambda m: m["model_config"].update(activation="gelu!")),
        "activation 'gelu!'",
    ),
}


@pytest.mark.parametrize("case", list(BAD_SNAPSHOTS))
def test_bad_snapshots_are_refused_with_the_problem_and_the_path(tmp_path, states, case):
    corrupt, message = BAD_SNAPSHOTS[case]
    path = tmp_path / "snap"
    make_snapshot(path, "tictactoe", states["tictactoe"])
    corrupt(path)
    with pytest.raises(SnapshotError, match=re.escape(message)) as err:
        load_policy(path)
    assert str(path) in str(err.value)


def test_a_snapshot_of_another_game_is_refused(tmp_path, states):
    path = tmp_path / "snap"
    make_snapshot(path, "tictactoe", states["tictactoe"])
    with pytest.raises(SnapshotError, match="for game 'tictactoe', not 'connect_four'") as err:
        load_policy(path, game="connect_four")
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    ("where", "message"),
    [("does/not/exist", "does not exist"), ("bogus-scheme://x/y", "are off; allow them")],
)
def test_missing_locations_are_refused(tmp_path, where, message):
    target = where if "://" in where else str(tmp_path / where)
    with pytest.raises(SnapshotError, match=message) as err:
        load_policy(target)
    assert target in str(err.value)


# ---- bad input on saving: refused before anything is written -------------------------


def _meta(game: str = "tictactoe", **changes: Any) -> SnapshotMetadata:
    return replace(player_metadata(game, MODEL_CONFIG, "main_0", 0), **changes)


BAD_SAVES: dict[str, tuple[Callable[[dict], tuple[dict, SnapshotMetadata]], str]] = {
    "format version": (lambda s: (s, _meta(format_version=7)), "format version 7"),
    "model_config": (
        lambda s: (s, _meta(model_config={"hidden_sizes": [8], "activation": "relu"})),
        "weights do not fit",
    ),
    "weights of another game": (lambda s: (s, _meta("connect_four")), "weights do not fit"),
    "spaces of another game": (
        lambda s: (s, _meta(observation_space=_meta("connect_four").observation_space)),
        "does not match game",
    ),
    "no policy tensors": (
        lambda s: ({k: v for k, v in s.items() if k.startswith("value_net.")}, _meta()),
        "no policy_net",
    ),
    "metadata not JSON": (lambda s: (s, _meta(extra={"x": object()})), "not JSON"),
}


@pytest.mark.parametrize("remote", [False, True], ids=["local", "remote"])
@pytest.mark.parametrize("case", list(BAD_SAVES))
def test_bad_saves_write_nothing(tmp_path, states, case, remote):
    build, message = BAD_SAVES[case]
    state, meta = build(states["tictactoe"])
    path = tmp_path / "out" / "snap"
    fs = PyFileSystem(RecordingHandler([])) if remote else None
    with pytest.raises(SnapshotError, match=re.escape(message)) as err:
        save_snapshot(path, state, meta, filesystem=fs)
    assert str(path) in str(err.value)
    assert not (tmp_path / "out").exists()


# ---- ONNX ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("game", "mask_dtype"),
    [("tictactoe", "float32"), ("tictactoe", "int8"), ("connect_four", "float32")],
)
def test_onnx_matches_load_policy(tmp_path, states, game, mask_dtype):
    ort = pytest.importorskip("onnxruntime")
    from league.snapshot.onnx import export_onnx

    path = tmp_path / "snap"
    make_snapshot(path, game, states[game])
    model_path = export_onnx(path, tmp_path / "policy.onnx", mask_dtype=mask_dtype)
    assert sorted(os.listdir(tmp_path)) == ["policy.onnx", "snap"]  # no temp file left
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["observation", "action_mask"]
    assert [o.name for o in session.get_outputs()] == ["action_probs"]

    obs, masks = stacked(random_positions(game, 500, seed=3))
    policy = load_policy(path)
    expected = policy.action_probs_batch(obs, masks)
    feed = {"observation": obs.astype(np.float32), "action_mask": masks.astype(mask_dtype)}
    (got,) = session.run(None, feed)
    assert got.shape == expected.shape
    assert np.max(np.abs(got - expected)) < 1e-5
    assert np.all(got[masks == 0] == 0.0)  # illegal actions: exactly zero
    (single,) = session.run(None, {k: v[:1] for k, v in feed.items()})  # dynamic batch axis
    np.testing.assert_allclose(single[0], expected[0], atol=1e-5)


# ---- RLlib ---------------------------------------------------------------------------


def test_rllib_checkpoint_gives_the_same_logits(tmp_path, states):
    from ray.rllib.core.rl_module.rl_module import RLModule

    path = tmp_path / "snap"
    make_snapshot(path, "connect_four", states["connect_four"])
    out = export_rllib_checkpoint(path, tmp_path / "rllib")
    module = RLModule.from_checkpoint(out)
    assert module.inference_only and not hasattr(module, "value_net")

    obs, masks = probe("connect_four")
    batch = {
        Columns.OBS: {"observation": torch.as_tensor(obs), "action_mask": torch.as_tensor(masks)}
    }
    with torch.no_grad():
        logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    policy = load_policy(path)
    np.testing.assert_allclose(logits.numpy(), policy.logits_batch(obs, masks), atol=1e-6)
    np.testing.assert_allclose(
        torch.softmax(logits, -1).numpy(), policy.action_probs_batch(obs, masks), atol=1e-6
    )
    with pytest.raises(SnapshotError, match="not an empty directory"):
        export_rllib_checkpoint(path, out)


# ---- Ray-free loading ----------------------------------------------------------------

RAY_FREE_PLAYER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from envs.registry import get_game
    from league.snapshot import load_policy
    from league.tools.evaluation import Episode

    policy = load_policy(sys.argv[1], game="tictactoe")
    env = get_game("tictactoe").make()
    rng = np.random.default_rng(0)
    played = []

    def legal_move(obs):
        greedy = policy.act(obs, greedy=True)
        sampled = policy.act(obs, greedy=False, rng=rng)
        assert obs["action_mask"][greedy] == 1, (len(played), greedy)
        assert obs["action_mask"][sampled] == 1, (len(played), sampled)
        played.append(sampled)
        return sampled

    episode = 0
    while len(played) < 200:
        Episode(env, dict.fromkeys(env.possible_agents, legal_move), episode, turn_based=True).play()
        episode += 1
    assert "ray" not in sys.modules, sorted(m for m in sys.modules if m.startswith("ray"))
    print("legal", len(played))
    """
)


def test_load_policy_plays_legal_moves_without_ray(tmp_path, states):
    path = tmp_path / "snap"
    make_snapshot(path, "tictactoe", states["tictactoe"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(PYTHONPATH=str(REPO), SDL_VIDEODRIVER="dummy")
    result = subprocess.run(
        [sys.executable, "-c", RAY_FREE_PLAYER, str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    label, count = result.stdout.split()[-2:]
    assert label == "legal" and int(count) >= 200
