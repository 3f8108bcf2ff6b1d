"""Kill test: `league train` killed with SIGKILL mid-run, then `--resume`.

On both store backends (SQLite with PPO, Redis with APPO): after the kill the store is
ahead of the last checkpoint; resuming rolls it back to the checkpoint's sequence
number (the documented rule), so league size, payoff, ratings and match counts equal
those at the checkpoint, and training continues from there.

The Redis server wants a password, given in the URL of the first run: no file of the
run dir holds it, and the resume finds the store from config.json with the password
from LEAGUE_STORE_PASSWORD (league.store.secrets).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from redis_server import RedisServer
from tiny_run import ROOT, league_cmd, own_ray_env, tiny_config

from league.store import open_store

SECRET = "pw-9f3c1e7a-never-in-files"


def progress_iterations(run_dir: Path) -> int:
    path = run_dir / "progress.jsonl"
    if not path.is_file():
        return 0
    return sum(1 for line in path.read_text().splitlines() if line.strip())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("store", "algo"),
    # Each store and each algorithm once (a kill-and-resume costs ~40 s): the store
    # rule does not depend on the algorithm, and APPO samples asynchronously.
    [("sqlite", "ppo"), ("redis", "appo")],
)
def test_sigkill_then_resume_rolls_back_to_the_checkpoint(store, algo, tmp_path):
    if store == "sqlite":
        kill_then_resume(None, tmp_path, "--ppo.algo", algo)
        return
    with RedisServer(tmp_path / "redis", password=SECRET) as server:
        kill_then_resume(server.url(db=3), tmp_path, "--ppo.algo", algo)
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert files and not [p for p in files if SECRET.encode() in p.read_bytes()]


def kill_then_resume(store_url: str | None, tmp_path: Path, *flags: str) -> None:
    # Snapshots retire between checkpoints: a resume must still find them.
    config = tiny_config(tmp_path / "tiny.yaml", league={"max_snapshots": 2})
    run_dir = tmp_path / "run"
    base = ["train", "--run-dir", str(run_dir), "--config", str(config)]
    base += list(flags)
    if store_url:
        base += ["--store", store_url]
    env = own_ray_env()
    # The trainer's console goes to a file: a failure below shows its last lines.
    console = tmp_path / "trainer.log"
    with console.open("w") as out:
        proc = subprocess.Popen(
            league_cmd(*base, "--stop-minutes", "10"),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
    latest_file = run_dir / "checkpoints" / "latest.json"
    try:
        deadline = time.monotonic() + 240
        checkpointed = done = 0
        # Kill between checkpoints: a checkpoint exists and later iterations ran.
        while time.monotonic() < deadline and proc.poll() is None:
            if latest_file.is_file():
                checkpointed = json.loads(latest_file.read_text())["iteration"]
                done = progress_iterations(run_dir)
                if checkpointed >= 3 and done % 3 == 2:
                    break
            time.sleep(0.2)
        else:
            pytest.fail(
                f"training did not reach a checkpoint in time (exit code {proc.poll()}, "
                f"checkpoint at iteration {checkpointed}, {done} iterations in "
                f"progress.jsonl); its console ends:\n{console.read_text()[-3000:]}"
            )
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the trainer and its Ray processes
        proc.wait()

    latest = json.loads(latest_file.read_text())
    checkpoint_seq = latest["store_seq"]
    with open_store(store_url, run_dir) as store:
        assert store.seq() > checkpoint_seq  # iterations after the checkpoint were stored
        at_checkpoint = store.state(checkpoint_seq)
        matches_at_checkpoint = [m for m in store.matches() if m["seq"] <= checkpoint_seq]
        later_ids = {m["episode_id"] for m in store.matches() if m["seq"] > checkpoint_seq}
    assert at_checkpoint is not None and later_ids

    target = latest["env_steps"] + 600
    if store_url:  # config.json names the store; the password comes from the environment
        assert SECRET not in (run_dir / "config.json").read_text()
        base = base[: base.index("--store")]
        env["LEAGUE_STORE_PASSWORD"] = SECRET
    resumed = subprocess.run(
        league_cmd(*base, "--resume", "--stop-timesteps", str(target)),
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    out = resumed.stdout
    # A quiet console: RLlib's notices are in RUN_DIR/logs, League's lines on screen.
    assert "new API stack" not in out + resumed.stderr
    assert "new API stack" in (run_dir / "logs" / "ray.log").read_text()
    assert "next:" in out and f"league report --run-dir {run_dir}" in out
    assert "rolling back" in out
    assert f"league restored at seq {checkpoint_seq}" in out
    assert f"{len(at_checkpoint['snapshots'])} snapshots" in out
    assert f"{len(matches_at_checkpoint)} matches" in out

    with open_store(store_url, run_dir) as store:
        # History up to the checkpoint is exactly what it was; the lost iterations
        # are gone, and training wrote new ones after it.
        assert store.state(checkpoint_seq) == at_checkpoint
        kept = [m for m in store.matches() if m["seq"] <= checkpoint_seq]
        assert kept == matches_at_checkpoint
        after = store.matches(since_seq=checkpoint_seq)
        assert after and not ({m["episode_id"] for m in after} & later_ids)
        assert store.seq() > checkpoint_seq
        registry = {sid for sid in store.snapshots() if "@" in sid}  # not reference bots
    # Retired snapshots' folders went at the final checkpoint; the league's are there.
    assert {p.name for p in (run_dir / "snapshots").iterdir()} == registry
    final = json.loads(latest_file.read_text())
    assert final["env_steps"] >= target and final["iteration"] > latest["iteration"]
