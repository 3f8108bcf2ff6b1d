"""`league export`, `league play` and `league report` as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from envs.registry import game_spaces
from league.snapshot import load_policy, player_metadata, save_snapshot
from rlmodules.masked_policy import masked_policy_spec

ROOT = Path(__file__).resolve().parents[1]
MODEL = {"hidden_sizes": [16], "activation": "relu"}


def league(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "league.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A run dir holding main_0's weights and one snapshot, as training writes them."""
    run = tmp_path_factory.mktemp("cli") / "run"
    obs_space, act_space = game_spaces("tictactoe")
    for path, seed in ((run / "players" / "main_0", 0), (run / "snapshots" / "main_0@3", 1)):
        import torch

        torch.manual_seed(seed)
        module = masked_policy_spec(obs_space, act_space, MODEL).build()
        save_snapshot(path, module.get_state(), player_metadata("tictactoe", MODEL, "main_0", 10))
    return run


def _random_obs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    obs = rng.integers(0, 2, (64, 3, 3, 2)).astype(np.int8)
    masks = rng.integers(0, 2, (64, 9)).astype(np.int8)
    masks[:, 0] = 1
    return obs, masks


def test_export_snapshot_and_onnx(run_dir, tmp_path):
    import onnxruntime

    out = tmp_path / "exported"
    proc = league("export", "--run-dir", str(run_dir), "--player", "main_0", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    original, exported = load_policy(run_dir / "players" / "main_0"), load_policy(out)
    obs, masks = _random_obs(np.random.default_rng(0))
    assert np.allclose(
        original.action_probs_batch(obs, masks), exported.action_probs_batch(obs, masks)
    )

    # The exported snapshot plays legal moves in a fresh process that never imports Ray.
    script = f"""
import sys
import numpy as np
from pettingzoo.classic import tictactoe_v3
from league.snapshot import load_policy
policy = load_policy({str(out)!r})
rng = np.random.default_rng(0)
moves = 0
for game in range(30):
    env = tictactoe_v3.env()
    env.reset(seed=game)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = policy.act(obs, greedy=bool(game % 2), rng=rng)
        assert obs["action_mask"][action] == 1, (obs, action)
        moves += 1
        env.step(action)
assert "ray" not in sys.modules
print("legal moves", moves)
"""
    fresh = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert fresh.returncode == 0, fresh.stderr
    assert int(fresh.stdout.split()[-1]) > 100

    onnx_path = tmp_path / "main.onnx"
    proc = league(
        "export", "--run-dir", str(run_dir), "--player", "main_0", "--version", "3",
        "--out", str(onnx_path), "--format", "onnx",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    session = onnxruntime.InferenceSession(str(onnx_path))
    (probs,) = session.run(
        None, {"observation": obs.astype(np.float32), "action_mask": masks.astype(np.float32)}
    )
    snapshot = load_policy(run_dir / "snapshots" / "main_0@3")
    assert np.allclose(probs, snapshot.action_probs_batch(obs, masks), atol=1e-5)


def test_export_refuses_missing_version(run_dir, tmp_path):
    proc = league(
        "export", "--run-dir", str(run_dir), "--player", "main_0", "--version", "9",
        "--out", str(tmp_path / "x"),
    )  # fmt: skip
    assert proc.returncode == 2 and "no player 'main_0@9'" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_play_in_the_terminal_with_scripted_stdin(run_dir):
    # Bad inputs first (re-prompted), then every cell in order: the human's moves
    # that are taken get refused too, and the game ends one way or another.
    moves = "x\n42\n\n" + "\n".join(str(i) for i in range(9) for _ in range(2)) + "\n"
    proc = league("play", "--run-dir", str(run_dir), "--player", "main_0", stdin=moves)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "You are X" in out and "Computer (O) plays" in out
    assert out.count("\n") > 10
    assert any(word in out for word in ("You win", "You lose", "draw", "Draw"))


def test_report_refuses_a_run_dir_without_progress(tmp_path):
    proc = league("report", "--run-dir", str(tmp_path))
    assert proc.returncode == 2 and "progress.jsonl" in proc.stderr
